// Liveness and readiness: /healthz says the process serves requests; /readyz that the database
// answers and every migration is applied (so a load balancer only routes to instances that can work).
// /readyz answers within 2 s whatever the dependencies do (a stalled network, a held lock, a dead
// server): each check runs in parallel under its own time limit, and the answer names each one's state.
import { sql } from 'kysely';
import type { FastifyInstance } from 'fastify';
import type { DatabaseHandle } from '../db/database.ts';
import { migrationsAreCurrent } from '../db/migrate.ts';
import { Problem } from './problems.ts';

/** Dependencies the instance works without (Redis: rate limits fall back to memory): reported, never failing readiness. */
export interface SoftChecks {
  redis?: (() => Promise<'ok' | 'degraded'>) | undefined;
}

/** Each check's limit; they run in parallel, so /readyz answers well within 2 s. */
const CHECK_LIMIT_MS = 1500;

type DatabaseState = 'ok' | 'unavailable' | 'migrations-pending';

/**
 * Runs `check` at most once at a time: while a database stalls, probes from a load balancer join the
 * one in flight instead of each taking a pooled connection. A caller waits at most CHECK_LIMIT_MS.
 */
function limited<T>(check: () => Promise<T>, late: T): () => Promise<T> {
  let inFlight: Promise<T> | undefined;
  return () => {
    inFlight ??= check().finally(() => (inFlight = undefined));
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<T>((resolve) => (timer = setTimeout(resolve, CHECK_LIMIT_MS, late)));
    return Promise.race([inFlight, deadline]).finally(() => clearTimeout(timer));
  };
}

function databaseCheck(handle: DatabaseHandle): () => Promise<DatabaseState> {
  return limited(async () => {
    try {
      await sql`select 1`.execute(handle.db);
      return (await migrationsAreCurrent(handle)) ? 'ok' : 'migrations-pending';
    } catch {
      return 'unavailable';
    }
  }, 'unavailable');
}

export function registerHealth(app: FastifyInstance, handle: DatabaseHandle, soft: SoftChecks = {}): void {
  const noStore = (reply: { header: (k: string, v: string) => unknown }) => reply.header('cache-control', 'no-store');
  const database = databaseCheck(handle);
  const redis = soft.redis && limited(soft.redis, 'degraded' as const);
  app.get('/healthz', { schema: { tags: ['operations'], summary: 'Process is alive' } }, async (_request, reply) => {
    noStore(reply);
    return { status: 'ok' };
  });
  app.get(
    '/readyz',
    { schema: { tags: ['operations'], summary: 'Database reachable and migrations current' } },
    async (_request, reply) => {
      noStore(reply);
      const [databaseState, redisState] = await Promise.all([database(), redis?.()]);
      // `checks` names every dependency and its state, so a failing probe says which one failed.
      const checks = { database: databaseState, ...(redisState && { redis: redisState }) };
      if (databaseState === 'unavailable') {
        throw new Problem('notReady', 'the database is not reachable', {
          headers: { 'retry-after': '5' },
          extensions: { checks },
        });
      }
      if (databaseState === 'migrations-pending') {
        throw new Problem('notReady', 'database migrations are pending: run `signet migrate`', {
          headers: { 'retry-after': '30' },
          extensions: { checks },
        });
      }
      return { status: 'ready', database: handle.dialect, checks };
    },
  );
}
