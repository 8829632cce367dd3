// Errors that mean "the database cannot be reached right now", as opposed to a fault in a query or in
// our code. They become 503 with Retry-After (RFC 9110 §15.6.4, §10.2.3): a temporary outage
// (docs/operations/failure-behaviour.md), which clients and gateways retry, where a 500 would say the request
// itself broke something.
import type { FastifyInstance } from 'fastify';
import type { Metrics } from '../../metrics/metrics.ts';

/** Socket-level failures reaching PostgreSQL (Node system error codes). */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  'EAI_AGAIN',
]);

/**
 * SQLSTATEs (PostgreSQL manual, Appendix A): class 08 connection exception; 57P01 admin_shutdown,
 * 57P02 crash_shutdown, 57P03 cannot_connect_now (starting up, recovery); 53300 too_many_connections.
 * And the timeouts the service sets on every connection (src/db/database.ts): 57014 query_canceled
 * (statement_timeout), 55P03 lock_not_available (lock_timeout), 25P03 idle_in_transaction_session_timeout.
 * These say the database is too slow or blocked right now (a lock held elsewhere, an overload), not
 * that the request is wrong: the same request succeeds once it clears, which is what 503 and
 * Retry-After tell a client. No query of ours runs near the statement timeout when the database is
 * healthy; one that did would show as 503s with the cause in the log (every 5xx is logged as an error).
 */
const SQLSTATE = /^(08[0-9A-Z]{3}|57P0[123]|53300|57014|55P03|25P03)$/;

/** node-postgres reports these without a code: pool connect timeout, and a connection lost under a client. */
const PG_MESSAGES =
  /^(timeout exceeded when trying to connect|Connection terminated|Client has encountered a connection error|Client was closed and is not queryable)/;

/**
 * node:sqlite's error for SQLITE_BUSY (errcode 5; extended codes keep 5 in the low byte): another process holds the
 * write lock past busy_timeout.
 */
const SQLITE_BUSY = 5;

interface DriverError {
  code?: unknown;
  severity?: unknown;
  errcode?: unknown;
  message?: unknown;
}

export function isDatabaseOutage(err: unknown): boolean {
  if (err instanceof AggregateError) return err.errors.some(isDatabaseOutage); // connect tried several addresses
  if (typeof err !== 'object' || err === null) return false;
  const { code, severity, errcode, message } = err as DriverError;
  if (code === 'ERR_SQLITE_ERROR') return typeof errcode === 'number' && (errcode & 0xff) === SQLITE_BUSY;
  if (typeof code === 'string' && (NETWORK_CODES.has(code) || SQLSTATE.test(code))) return true;
  // FATAL "reports an error that caused the current session to abort" (PostgreSQL manual, Message
  // Severity Levels): whatever its SQLSTATE (55000 for a database with allow_connections off, 28P01
  // for a rejected password), the connection is gone. (The S field is localized with lc_messages;
  // the SQLSTATEs above still match then.)
  if (severity === 'FATAL' || severity === 'PANIC') return true;
  return typeof message === 'string' && PG_MESSAGES.test(message);
}

/** Failures to open a connection: the query that met one was never sent (PostgreSQL manual, Appendix A). */
const CONNECT_CODES = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', '57P03', '53300']);

/**
 * Whether `err` says no connection could be had at all (refused, unreachable, the pool's connect timeout),
 * so the statement that met it never reached the database; a connection lost under a statement already
 * sent says nothing of whether it ran.
 */
export function isConnectFailure(err: unknown): boolean {
  if (err instanceof AggregateError) return err.errors.length > 0 && err.errors.every(isConnectFailure);
  if (typeof err !== 'object' || err === null) return false;
  const { code, message } = err as DriverError;
  if (typeof code === 'string' && CONNECT_CODES.has(code)) return true;
  return typeof message === 'string' && message.startsWith('timeout exceeded when trying to connect');
}

/**
 * A failure the database reported: an outage (above), or a fault in a query (a missing table, a
 * violated constraint nobody handled). node-postgres errors carry a SQLSTATE `code` and a `severity`;
 * node:sqlite's carry ERR_SQLITE_ERROR. Anything else is not the database's.
 */
function databaseErrorKind(err: unknown): 'outage' | 'other' | undefined {
  if (isDatabaseOutage(err)) return 'outage';
  if (typeof err !== 'object' || err === null) return undefined;
  const { code, severity } = err as DriverError;
  if (code === 'ERR_SQLITE_ERROR') return 'other';
  return typeof severity === 'string' && typeof code === 'string' ? 'other' : undefined;
}

/**
 * Counts requests that failed because of the database (signet_database_errors_total, docs/reference/metrics.md):
 * every error a route throws reaches the onError hook before the one error handler answers it.
 */
export function countDatabaseErrors(app: FastifyInstance, metrics: Pick<Metrics, 'databaseError'>): void {
  app.addHook('onError', (_request, _reply, error, done) => {
    const kind = databaseErrorKind(error);
    if (kind) metrics.databaseError(kind);
    done();
  });
}
