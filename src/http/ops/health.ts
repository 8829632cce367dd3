// Liveness and readiness: /healthz says the process serves requests (nothing else: an orchestrator
// restarts a process that fails it); /readyz that the database answers, every migration is applied and,
// with the built-in authorization server, its signing keys are loaded (so a load balancer only routes to
// instances that can work). Redis is reported but never fails readiness.
// /readyz answers within 2 s whatever the dependencies do (a stalled network, a held lock, a dead
// server): each check runs in parallel under its own time limit, and the answer names each one's state.
import { sql } from 'kysely';
import type { FastifyInstance } from 'fastify';
import type { DatabaseHandle } from '../../db/database.ts';
import { migrationsAreCurrent } from '../../db/migrate.ts';
import { problemResponse, problemWith } from '../representation/openapi.ts';
import { Problem } from '../problems/problems.ts';

/** Dependencies the instance works without (Redis: rate limits fall back to memory): reported, never failing readiness. */
interface SoftChecks {
  redis?: (() => Promise<'ok' | 'degraded'>) | undefined;
}

/**
 * Dependencies the instance cannot serve without, beyond the database: the built-in authorization
 * server's signing keys (passed in by app.ts: http/ knows nothing of the auth server). Failing readiness.
 */
interface HardChecks {
  signingKeys?: (() => Promise<'ok' | 'missing'>) | undefined;
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

// The bodies as documented. Fastify serializes the 200s with these schemas (unknown members would be
// dropped), so they list every member, in the order the handlers build them.
const DATABASE_STATES = ['ok', 'unavailable', 'migrations-pending'];
const MIGRATION_STATES = ['ok', 'pending', 'unknown'];
const REDIS_STATES = ['ok', 'degraded'];
const KEY_STATES = ['ok', 'missing'];

function checksSchema(databaseStates: string[], migrationStates: string[], keyStates: string[]) {
  return {
    type: 'object',
    description:
      'Each dependency and its state. `migrations` is `unknown` while the database is unreachable; ' +
      '`redis` only when REDIS_URL is set (never fails readiness); `signing_keys` only with the built-in ' +
      'authorization server (its token-signing keys are loaded).',
    required: ['database'],
    additionalProperties: false,
    properties: {
      database: { type: 'string', enum: databaseStates },
      migrations: { type: 'string', enum: migrationStates },
      redis: { type: 'string', enum: REDIS_STATES },
      signing_keys: { type: 'string', enum: keyStates },
    },
  };
}

const LIVE = {
  type: 'object',
  required: ['status'],
  additionalProperties: false,
  properties: { status: { type: 'string', const: 'ok' } },
};

const READY = {
  type: 'object',
  required: ['status', 'database', 'checks'],
  additionalProperties: false,
  properties: {
    status: { type: 'string', const: 'ready' },
    database: { type: 'string', enum: ['sqlite', 'postgres'], description: 'The database dialect.' },
    checks: checksSchema(['ok'], ['ok'], ['ok']),
  },
};

const NOT_READY = problemWith({ checks: checksSchema(DATABASE_STATES, MIGRATION_STATES, KEY_STATES) });

const SHARED_RESPONSES = {
  400: problemResponse('Malformed request (HTTP syntax, Host).'),
  500: problemResponse('A fault.'),
};

const MIGRATIONS_OF: Record<DatabaseState, string> = {
  ok: 'ok',
  'migrations-pending': 'pending',
  unavailable: 'unknown',
};

export function registerHealth(
  app: FastifyInstance,
  handle: DatabaseHandle,
  soft: SoftChecks = {},
  hard: HardChecks = {},
): void {
  const noStore = (reply: { header: (k: string, v: string) => unknown }) => reply.header('cache-control', 'no-store');
  const database = databaseCheck(handle);
  const redis = soft.redis && limited(soft.redis, 'degraded' as const);
  const signingKeys = hard.signingKeys && limited(hard.signingKeys, 'missing' as const);
  // Probes are never rate limited (a load balancer polls from one address).
  app.get(
    '/healthz',
    {
      config: { rateLimit: false },
      schema: {
        tags: ['operations'],
        summary: 'Process is alive',
        response: {
          200: { ...LIVE, description: 'The process serves requests.' },
          ...SHARED_RESPONSES,
          503: problemResponse('Shutting down or overloaded; with Retry-After.'),
        },
      },
    },
    async (_request, reply) => {
      noStore(reply);
      return { status: 'ok' };
    },
  );
  app.get(
    '/readyz',
    {
      config: { rateLimit: false },
      schema: {
        tags: ['operations'],
        summary: 'Database reachable, migrations current, signing keys loaded',
        response: {
          200: {
            ...READY,
            description:
              'Ready: the database answers, every migration is applied and (built-in authorization server) the signing keys are loaded.',
          },
          ...SHARED_RESPONSES,
          503: problemResponse(
            'Not ready (`checks` names each dependency’s state), shutting down or overloaded; with Retry-After.',
            NOT_READY,
          ),
        },
      },
    },
    async (_request, reply) => {
      noStore(reply);
      const [databaseState, redisState, keysState] = await Promise.all([database(), redis?.(), signingKeys?.()]);
      // `checks` names every dependency and its state, so a failing probe says which one failed.
      const checks = {
        database: databaseState,
        migrations: MIGRATIONS_OF[databaseState],
        ...(redisState && { redis: redisState }),
        ...(keysState && { signing_keys: keysState }),
      };
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
      if (keysState === 'missing') {
        throw new Problem('notReady', 'the authorization server has no signing keys loaded: run `signet keys rotate`', {
          headers: { 'retry-after': '30' },
          extensions: { checks },
        });
      }
      return { status: 'ready', database: handle.dialect, checks };
    },
  );
}
