// Creates or drops the throw-away database CI runs the PostgreSQL half of the suite in.
import pg from 'pg';

const [action, adminUrl, name] = process.argv.slice(2);
if (!action || !adminUrl || !name || !/^[a-z0-9_]+$/.test(name)) {
  console.error('usage: pg-database.ts create|drop <admin-url> <database-name>');
  process.exit(2);
}
const client = new pg.Client({ connectionString: adminUrl });
await client.connect();
try {
  await client.query(action === 'create' ? `create database ${name}` : `drop database if exists ${name} with (force)`);
  console.log(`${action === 'create' ? 'created' : 'dropped'} database ${name}`);
} finally {
  await client.end();
}
