// Creates or drops the throw-away database CI runs the PostgreSQL half of the suite in. The tests make
// databases of their own next to it (test/helpers/database-template.ts: `<name>_tpl_*` templates and
// `<name>_t_*` copies); dropping the CI database drops those too, so that a run leaves nothing behind.
import pg from 'pg';

const [action, adminUrl, name] = process.argv.slice(2);
if (!action || !adminUrl || !name || !/^[a-z0-9_]+$/.test(name)) {
  console.error('usage: pg-database.ts create|drop <admin-url> <database-name>');
  process.exit(2);
}
const client = new pg.Client({ connectionString: adminUrl });
await client.connect();
try {
  if (action === 'create') {
    await client.query(`create database ${name}`);
    console.log(`created database ${name}`);
  } else {
    const { rows } = await client.query<{ datname: string }>('select datname from pg_database');
    const derived = rows
      .map((row) => row.datname)
      .filter((db) => db.startsWith(`${name}_tpl_`) || db.startsWith(`${name}_t_`));
    for (const db of [...derived, name]) await client.query(`drop database if exists ${db} with (force)`);
    console.log(`dropped database ${name}${derived.length > 0 ? ` and ${derived.length} made by the tests` : ''}`);
  }
} finally {
  await client.end();
}
