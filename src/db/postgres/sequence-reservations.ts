// PostgreSQL: values taken from a sequence for requests that run at the same time, fetched together
// (docs/operations/postgresql.md, docs/benchmarks-history.md "PostgreSQL creates in one round trip"). A create needs
// its order's id before its one write statement (the response and the event carry it), which was a round trip of its
// own per create; under load most creates now share it.
import { sql, type RawBuilder } from 'kysely';
import type { Db } from '../executor.ts';

interface Waiter<T> {
  resolve(value: T): void;
  reject(err: unknown): void;
}

/** Most values one fetch takes: a bound on the statement, not a stock (see Reservations). */
export const MAX_VALUES_PER_FETCH = 256;

/**
 * Hands out values of `fetch`, one per take(), like group commit without a window: a take() while no
 * fetch is out starts one for itself; the takes that arrive while it is out wait and the next fetch
 * takes one value for each of them. Nothing is kept in stock between fetches, so a value is always
 * fresh from the sequence when it is handed out: ids are not given from a block taken long before
 * (which, with several instances, would put an old id on a new order), and nothing is lost but the
 * values of a fetch whose callers are gone (a sequence has gaps anyway: nextval is never rolled back).
 * A failed fetch fails exactly the takes it was for.
 */
export class Reservations<T> {
  readonly #fetch: (count: number) => Promise<T[]>;
  readonly #waiting: Waiter<T>[] = [];
  #fetching = false;

  constructor(fetch: (count: number) => Promise<T[]>) {
    this.#fetch = fetch;
  }

  take(): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#waiting.push({ resolve, reject });
      if (!this.#fetching) void this.#fetchForWaiting();
    });
  }

  async #fetchForWaiting(): Promise<void> {
    this.#fetching = true;
    const batch = this.#waiting.splice(0, MAX_VALUES_PER_FETCH);
    try {
      const values = await this.#fetch(batch.length);
      if (values.length !== batch.length) throw new Error(`asked for ${batch.length} values, got ${values.length}`);
      batch.forEach((waiter, i) => waiter.resolve(values[i]!));
    } catch (err) {
      for (const waiter of batch) waiter.reject(err);
    } finally {
      this.#fetching = false;
      if (this.#waiting.length > 0) void this.#fetchForWaiting();
    }
  }
}

const byDatabase = new WeakMap<Db, Map<RawBuilder<unknown>, Reservations<unknown>>>();

/**
 * The Reservations of `value` (the same RawBuilder object each time, e.g. a `nextval(…)`) on `db`.
 * `value` must give a new value each time it is evaluated, as nextval does: one fetch evaluates it
 * once per row of `generate_series`, and hands the values out in ascending order, so the caller that
 * asked first gets the lowest.
 */
export function reservationsOf<T>(db: Db, value: RawBuilder<T>): Reservations<T> {
  let perValue = byDatabase.get(db);
  if (!perValue) byDatabase.set(db, (perValue = new Map()));
  let reservations = perValue.get(value) as Reservations<T> | undefined;
  if (!reservations) {
    reservations = new Reservations<T>(async (count) => {
      const { rows } = await sql<{ value: T }>`select ${value} as value
        from generate_series(1, ${count}::int) order by 1`.execute(db);
      return rows.map((row) => row.value);
    });
    perValue.set(value, reservations as Reservations<unknown>);
  }
  return reservations;
}
