// The Redis client behind shared rate-limit counters, bounded in time: without these options ioredis
// waits forever on a server that accepts bytes and never answers (a stall, a half-open connection).
import { Redis } from 'ioredis';

/** How long TCP waits on an idle connection before its first keepalive probe. */
const KEEPALIVE_DELAY_MS = 10_000;
/** /readyz answers within 2 s whatever happens, so its Redis probe waits at most this long. */
const HEALTH_TIMEOUT_MS = 1000;

export function createRedis(url: string, timeoutMs: number): Redis {
  return new Redis(url, {
    lazyConnect: false,
    // A command sent while disconnected fails at once instead of waiting in a queue.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    // An increment that timed out was counted in memory instead; replaying it later would count it twice.
    autoResendUnfulfilledCommands: false,
    commandTimeout: timeoutMs,
    connectTimeout: timeoutMs,
    // No byte back for this long while a command waits: the connection is dropped and a new one opened,
    // rather than waiting minutes for TCP to notice a peer that is gone.
    socketTimeout: timeoutMs,
    keepAlive: KEEPALIVE_DELAY_MS,
  });
}

/** For /readyz: `ok` when Redis answers a PING promptly, else `degraded` (never throws, never waits past 1 s). */
export async function redisHealth(redis: Redis): Promise<'ok' | 'degraded'> {
  if (redis.status !== 'ready') return 'degraded';
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'degraded'>((resolve) => {
    timer = setTimeout(() => resolve('degraded'), HEALTH_TIMEOUT_MS);
  });
  const ping = redis.ping().then(
    () => 'ok' as const,
    () => 'degraded' as const,
  );
  try {
    return await Promise.race([ping, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
