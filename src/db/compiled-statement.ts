// Fixed-shape statements of the hot paths, built and compiled by Kysely once per dialect and then run
// again with new parameters. Kysely builds an operation tree and compiles it to SQL on every call; for
// the statements of a create that cost more than SQLite took to run them (profiled at ~97 µs of a
// ~440 µs create: docs/benchmarks-history.md, "Compiled statements"). The SQL text is unchanged, so the drivers'
// statement caches still apply. On the embedded database a compiled SELECT run on the database itself, and any compiled
// statement run in a transaction once Kysely has named its connection, also skip Kysely's executor, whose connection
// hand-out and result pass allocate ~4 KB per call (direct-read.ts).
import { SelectQueryNode, type Compilable, type CompiledQuery, type QueryResult } from 'kysely';
import { directConnectionOf, directReadOf, isDirectTransaction } from './direct-read.ts';
import type { Executor } from './executor.ts';

const PARAMETER = Symbol('compiled-statement parameter');

interface Placeholder {
  readonly [PARAMETER]: string;
}

function isPlaceholder(value: unknown): value is Placeholder {
  return typeof value === 'object' && value !== null && PARAMETER in value;
}

/**
 * Stands for the run's value named `name` while the statement is built. Typed as that value so the
 * builder type-checks; only ever a parameter value, never a column or an operator.
 */
export type ParamOf<V> = <K extends keyof V & string>(name: K) => V[K];

/**
 * A ParamOf whose names are not known where it is passed on: the parts of one statement, built by
 * different modules, each take their own names from it (a ParamOf<V> of every V converts both ways).
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- only the value type is erased
export type AnyParam = ParamOf<any>;

interface Compiled<R> {
  query: CompiledQuery<R>;
  /** A SELECT: it may be read directly (direct-read.ts). */
  reads: boolean;
  /** Per parameter position: the name of the run's value, or undefined for a constant of the builder. */
  names: ReadonlyArray<string | undefined>;
}

/**
 * A statement built by `build` once per dialect (adapter) and run with `values`. Constants the builder
 * writes stay constants; every `param(name)` takes the run's `values[name]`, wherever Kysely placed it.
 */
export function compiledStatement<V extends object, R>(
  build: (db: Executor, param: ParamOf<V>) => Compilable<R>,
): (db: Executor, values: V) => Promise<QueryResult<R>> {
  const byAdapter = new WeakMap<object, Compiled<R>>();
  const param = ((name: string) => ({ [PARAMETER]: name }) satisfies Placeholder) as unknown as ParamOf<V>;
  return (db, values) => {
    const adapter = db.getExecutor().adapter;
    let compiled = byAdapter.get(adapter);
    if (!compiled) {
      const query = build(db, param).compile();
      compiled = {
        query,
        reads: SelectQueryNode.is(query.query),
        names: query.parameters.map((p) => (isPlaceholder(p) ? p[PARAMETER] : undefined)),
      };
      byAdapter.set(adapter, compiled);
    }
    const { query, names, reads } = compiled;
    const parameters = names.map((name, i) =>
      name === undefined ? query.parameters[i] : (values as Record<string, unknown>)[name],
    );
    const run = { ...query, parameters };
    if (isDirectTransaction(db)) return executeInTransaction(db, run);
    return (reads ? directReadOf(db)?.<R>(run) : undefined) ?? db.executeQuery<R>(run);
  };
}

async function executeInTransaction<R>(trx: Executor, query: CompiledQuery<R>): Promise<QueryResult<R>> {
  const connection = await directConnectionOf(trx);
  return connection.executeDirect<R>(query) ?? trx.executeQuery<R>(query);
}

/** A row of placeholders named as its columns: the values of an INSERT whose run values are the row itself. */
export function placeholderRow<V, K extends keyof V & string>(
  param: ParamOf<V>,
  columns: readonly K[],
): { [C in K]: V[C] } {
  return Object.fromEntries(columns.map((column) => [column, param(column)])) as { [C in K]: V[C] };
}
