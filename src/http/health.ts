// Liveness and readiness: /healthz says the process serves requests; /readyz that the database
// answers and every migration is applied (so a load balancer only routes to instances that can work).
import { sql } from 'kysely';
import type { FastifyInstance } from 'fastify';
import type { DatabaseHandle } from '../db/database.ts';
import { migrationsAreCurrent } from '../db/migrate.ts';
import { Problem } from './problems.ts';

export function registerHealth(app: FastifyInstance, handle: DatabaseHandle): void {
  const noStore = (reply: { header: (k: string, v: string) => unknown }) => reply.header('cache-control', 'no-store');
  app.get('/healthz', { schema: { tags: ['operations'], summary: 'Process is alive' } }, async (_request, reply) => {
    noStore(reply);
    return { status: 'ok' };
  });
  app.get('/readyz', { schema: { tags: ['operations'], summary: 'Database reachable and migrations current' } }, async (_request, reply) => {
    noStore(reply);
    try {
      await sql`select 1`.execute(handle.db);
    } catch {
      throw new Problem('notReady', 'the database is not reachable', { headers: { 'retry-after': '5' } });
    }
    if (!(await migrationsAreCurrent(handle))) throw new Problem('notReady', 'database migrations are pending: run `signet migrate`', { headers: { 'retry-after': '30' } });
    return { status: 'ready', database: handle.dialect };
  });
}
