// Kysely's PostgreSQL introspector reads the columns of every schema in the database and calls
// pg_get_serial_sequence(name) on each. That call resolves the name against the live catalog, so a
// schema another session drops meanwhile fails the statement ("relation … does not exist"), and with
// it a migration of ours that was only asking whether its own bookkeeping table exists. This one
// looks at the connection's current schema only, by OID, which no concurrent DDL elsewhere can break.
import {
  PostgresDialect,
  sql,
  type DatabaseIntrospector,
  type DatabaseMetadataOptions,
  type Kysely,
  type SchemaMetadata,
  type TableMetadata,
} from 'kysely';

interface ColumnRow {
  table: string;
  kind: string;
  column: string;
  type: string;
  typeSchema: string;
  notNull: boolean;
  hasDefault: boolean;
  autoIncrementing: boolean;
  comment: string | null;
}

/** Kysely's own bookkeeping tables, hidden unless asked for, as Kysely's introspectors do. */
const KYSELY_TABLES = new Set(['kysely_migration', 'kysely_migration_lock']);

class CurrentSchemaIntrospector implements DatabaseIntrospector {
  readonly #db: Kysely<unknown>;

  constructor(db: Kysely<unknown>) {
    this.#db = db;
  }

  async getSchemas(): Promise<SchemaMetadata[]> {
    const { rows } = await sql<{ name: string }>`select nspname as name from pg_catalog.pg_namespace`.execute(this.#db);
    return rows;
  }

  async getTables(options: DatabaseMetadataOptions = { withInternalKyselyTables: false }): Promise<TableMetadata[]> {
    const { rows } = await sql<ColumnRow & { schema: string }>`
      select ns.nspname as schema, c.relname as table, c.relkind as kind, a.attname as column,
             typ.typname as type, tns.nspname as "typeSchema", a.attnotnull as "notNull", a.atthasdef as "hasDefault",
             (a.attidentity <> '' or coalesce(pg_get_expr(d.adbin, d.adrelid) like 'nextval(%', false)) as "autoIncrementing",
             col_description(c.oid, a.attnum) as comment
        from pg_catalog.pg_namespace ns
        join pg_catalog.pg_class c on c.relnamespace = ns.oid and c.relkind in ('r', 'v', 'p', 'f')
        join pg_catalog.pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
        join pg_catalog.pg_type typ on typ.oid = a.atttypid
        join pg_catalog.pg_namespace tns on tns.oid = typ.typnamespace
        left join pg_catalog.pg_attrdef d on d.adrelid = c.oid and d.adnum = a.attnum
       where ns.nspname = current_schema()
       order by c.relname, a.attnum`.execute(this.#db);
    const visible = options.withInternalKyselyTables ? rows : rows.filter((row) => !KYSELY_TABLES.has(row.table));
    return tablesOf(visible);
  }
}

function tablesOf(rows: (ColumnRow & { schema: string })[]): TableMetadata[] {
  const tables = new Map<string, TableMetadata>();
  for (const row of rows) {
    let table = tables.get(row.table);
    if (!table) {
      table = {
        name: row.table,
        schema: row.schema,
        isView: row.kind === 'v',
        isForeign: row.kind === 'f',
        columns: [],
      };
      tables.set(row.table, table);
    }
    table.columns.push({
      name: row.column,
      dataType: row.type,
      dataTypeSchema: row.typeSchema,
      isNullable: !row.notNull,
      hasDefaultValue: row.hasDefault,
      isAutoIncrementing: row.autoIncrementing,
      comment: row.comment ?? undefined,
    });
  }
  return [...tables.values()];
}

/** PostgresDialect whose introspection (and so Kysely's migrator) stays in the current schema. */
export class CurrentSchemaPostgresDialect extends PostgresDialect {
  override createIntrospector(db: Kysely<unknown>): DatabaseIntrospector {
    return new CurrentSchemaIntrospector(db);
  }
}
