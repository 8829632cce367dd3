// The default of MAX_CONNECTIONS, from the process's open-file limit (see src/http/admission/connections.ts).
import { readFileSync } from 'node:fs';

/** Used when the open-file limit cannot be read (not Linux): Linux's usual soft limit. */
const FALLBACK_DESCRIPTOR_LIMIT = 1024;
/** Share of the descriptors left to everything that is not a client connection. */
const RESERVED_SHARE = 0.2;
const MIN_CONNECTIONS = 64;
/** Beyond this, memory rather than descriptors runs out first (each idle connection costs tens of KiB). */
const MAX_DEFAULT_CONNECTIONS = 65_536;

/** The soft open-file limit of this process (`ulimit -n`), from /proc/self/limits. */
export function descriptorLimit(limitsFile = '/proc/self/limits'): number {
  try {
    const line = readFileSync(limitsFile, 'utf8')
      .split('\n')
      .find((l) => l.startsWith('Max open files'));
    const soft = line?.slice('Max open files'.length).trim().split(/\s+/)[0];
    if (soft === 'unlimited') return MAX_DEFAULT_CONNECTIONS / (1 - RESERVED_SHARE);
    const n = Number(soft);
    return Number.isSafeInteger(n) && n > 0 ? n : FALLBACK_DESCRIPTOR_LIMIT;
  } catch {
    return FALLBACK_DESCRIPTOR_LIMIT;
  }
}

/** MAX_CONNECTIONS' default: 80 % of the open-file limit, within 64 and 65,536. */
export function defaultMaxConnections(limit = descriptorLimit()): number {
  return Math.min(MAX_DEFAULT_CONNECTIONS, Math.max(MIN_CONNECTIONS, Math.floor(limit * (1 - RESERVED_SHARE))));
}
