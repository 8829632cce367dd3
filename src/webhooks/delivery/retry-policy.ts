// When the next attempt happens. The schedule is the configured list of delays (default: immediately,
// 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h: about 28 h in all, the retry window), each with ±20 %
// jitter so that endpoints recovering from an outage are not hit by every retry at the same instant.

export interface RetrySettings {
  scheduleMs: readonly number[];
  retryAfterCapMs: number;
  random?: () => number;
}

const JITTER = 0.2;

export function jittered(delayMs: number, random: () => number = Math.random): number {
  return Math.round(delayMs * (1 - JITTER + 2 * JITTER * random()));
}

/**
 * Delay before the attempt after `retryIndex` (the schedule position of the attempt that just failed),
 * or undefined when the schedule is exhausted. A Retry-After (429, 503: RFC 9110 §10.2.3) is honoured
 * up to the cap: the next attempt waits at least that long.
 */
export function nextRetryDelay(
  settings: RetrySettings,
  retryIndex: number,
  retryAfterMs: number | undefined,
): number | undefined {
  const scheduled = settings.scheduleMs[retryIndex + 1];
  if (scheduled === undefined) return undefined;
  const delay = jittered(scheduled, settings.random);
  if (retryAfterMs === undefined) return delay;
  return Math.max(delay, Math.min(retryAfterMs, settings.retryAfterCapMs));
}

/** The first attempt's delay from the schedule (normally 0: send at once). */
export function firstDelay(settings: RetrySettings): number {
  return jittered(settings.scheduleMs[0] ?? 0, settings.random);
}

/** Retry-After as delay-seconds or an HTTP-date (RFC 9110 §10.2.3), in ms from now; undefined when absent or malformed. */
export function parseRetryAfter(value: string | string[] | undefined, now: Date): number | undefined {
  const text = Array.isArray(value) ? value[0] : value;
  if (text === undefined) return undefined;
  if (/^\d{1,9}$/.test(text.trim())) return Number(text.trim()) * 1000;
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now.getTime());
}
