// GET /api/admin/stats (docs/guides/admin-api.md, Overview): what the console's overview charts, over a
// window of at most 24 h: webhook attempts, success rate, latency and pending deliveries, tokens issued
// and sign-ins. Reading needs admin:read.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Db, Dialect } from '../db/executor.ts';
import { boundedWindow } from '../http/admin/query-params.ts';
import { overview } from './stats.overview.ts';
import { StatsQuery, StatsResponses } from './stats.schemas.ts';

/** The overview's window is at most a day: until defaults to now, since to 24 h before until. */
const MAX_WINDOW_HOURS = 24;

export async function statsRoutes(fastify: FastifyInstance, options: { db: Db; dialect: Dialect }): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  app.get(
    '/api/admin/stats',
    {
      config: { scope: 'admin:read' },
      schema: {
        tags: ['admin'],
        summary:
          'The overview: webhook attempts, success rate, latency and pending deliveries, tokens issued and sign-ins over at most 24 h',
        querystring: StatsQuery,
        response: StatsResponses,
      },
    },
    async (request, reply) => {
      const now = new Date();
      const window = boundedWindow(request.query, now, MAX_WINDOW_HOURS);
      reply.header('cache-control', 'private, no-cache');
      return overview(options, window, now);
    },
  );
}
