// Value parsers for configuration settings. Each throws an Error whose message says what is expected;
// loadConfig prefixes it with the variable name.
import { BlockList, isIP } from 'node:net';

export class ConfigError extends Error {
  override name = 'ConfigError';
}

function integer(min: number, max: number) {
  return (raw: string): number => {
    if (!/^\d+$/.test(raw)) throw new Error(`expected a whole number between ${min} and ${max}`);
    const n = Number(raw);
    if (n < min || n > max) throw new Error(`expected a whole number between ${min} and ${max}`);
    return n;
  };
}

function oneOf<T extends string>(allowed: readonly T[]) {
  return (raw: string): T => {
    if (!(allowed as readonly string[]).includes(raw)) throw new Error(`expected one of ${allowed.join(', ')}`);
    return raw as T;
  };
}

function url(raw: string): string {
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new Error('expected an absolute http(s) URL');
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new Error('expected an http or https URL');
  return raw.replace(/\/+$/, '');
}

/**
 * A base URL: scheme and authority only (a trailing slash is dropped so paths can be appended). No
 * path: the routes are fixed (/api, /oauth, /docs …), so under a path prefix the links would name one
 * tree while the issuer and the API sat in another, and no gateway rule could serve both.
 */
function baseUrl(raw: string): string {
  const value = url(raw);
  const parsed = new URL(value);
  if (parsed.search || parsed.hash || parsed.username || parsed.password)
    throw new Error('expected a base URL without query, fragment or credentials');
  if (parsed.pathname !== '/')
    throw new Error(
      `expected scheme://host[:port] without a path ("${parsed.pathname}"); Signet serves /api and /oauth at the root, so a gateway must forward the host's root to it`,
    );
  return value;
}

function host(raw: string): string {
  if (isIP(raw) || /^[a-zA-Z0-9.-]+$/.test(raw)) return raw;
  throw new Error('expected an IP address or host name');
}

function databaseUrl(raw: string): string {
  if (raw.startsWith('sqlite:')) {
    if (raw.length === 'sqlite:'.length) throw new Error('expected sqlite:<path> or sqlite::memory:');
    return raw;
  }
  if (/^postgres(ql)?:\/\//.test(raw)) {
    try {
      new URL(raw);
    } catch {
      throw new Error('expected a valid postgres:// URL');
    }
    return raw;
  }
  throw new Error('expected sqlite:<path> or postgres://…');
}

function redisUrl(raw: string): string {
  if (!/^rediss?:\/\//.test(raw)) throw new Error('expected redis://host:port or rediss://…');
  return raw;
}

function trustProxy(raw: string): false | number | string[] {
  const value = raw.trim().toLowerCase();
  if (value === 'false' || value === '0' || value === 'off') return false;
  if (/^\d+$/.test(value)) return integer(1, 32)(value);
  const entries = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const named = ['loopback', 'linklocal', 'uniquelocal'];
  for (const entry of entries) {
    const [address, bits] = entry.split('/');
    const validBits = bits === undefined || /^\d{1,3}$/.test(bits);
    if (!named.includes(entry) && !(address && isIP(address) && validBits)) {
      throw new Error(`"${entry}" is not an address, CIDR or one of ${named.join(', ')}`);
    }
  }
  if (entries.length === 0) throw new Error('expected false, a hop count, or a list of addresses');
  return entries;
}

function algorithmList(allowed: string[]) {
  return (raw: string): string[] => {
    const list = raw
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    for (const alg of list) {
      if (!allowed.includes(alg)) throw new Error(`"${alg}" is not allowed; choose from ${allowed.join(', ')}`);
    }
    if (list.length === 0) throw new Error('expected at least one algorithm');
    return list;
  };
}

function originList(raw: string): string[] {
  return raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((origin) => {
      const parsed = new URL(url(origin));
      if (parsed.origin !== origin) throw new Error(`"${origin}" is not an origin (scheme://host[:port], no path)`);
      return origin;
    });
}

function text(raw: string): string {
  return raw;
}

function boolean(raw: string): boolean {
  if (/^(true|1|yes|on)$/i.test(raw)) return true;
  if (/^(false|0|no|off)$/i.test(raw)) return false;
  throw new Error('expected true or false');
}

function aesKey(raw: string): Buffer {
  const key = Buffer.from(raw, 'base64url');
  if (key.length !== 32) throw new Error('expected 32 bytes, base64url-encoded');
  return key;
}

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `500ms`, `5s`, `5m`, `2h`, `1d`, or a bare number of seconds; in milliseconds, within bounds. */
function duration(minMs: number, maxMs: number) {
  const describe = (ms: number) => (ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`);
  return (raw: string): number => {
    const match = /^(\d+)(ms|s|m|h|d)?$/.exec(raw.trim());
    if (!match) throw new Error('expected a duration such as 500ms, 5s, 5m, 2h or 1d');
    const ms = Number(match[1]) * DURATION_UNITS[match[2] ?? 's']!;
    if (ms < minMs || ms > maxMs)
      throw new Error(`expected a duration between ${describe(minMs)} and ${describe(maxMs)}`);
    return ms;
  };
}

function durationList(minMs: number, maxMs: number, maxEntries: number) {
  const one = duration(minMs, maxMs);
  return (raw: string): number[] => {
    const list = raw
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean)
      .map(one);
    if (list.length === 0 || list.length > maxEntries)
      throw new Error(`expected 1 to ${maxEntries} comma-separated durations`);
    return list;
  };
}

/** Addresses and CIDRs, or the names loopback, private, linklocal, uniquelocal. */
function networkList(raw: string): string[] {
  const named = ['loopback', 'private', 'linklocal', 'uniquelocal'];
  const entries = raw
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);
  for (const entry of entries) {
    const [address, bits] = entry.split('/');
    const maxBits = address && isIP(address) === 6 ? 128 : 32;
    const validBits = bits === undefined || (/^\d{1,3}$/.test(bits) && Number(bits) <= maxBits);
    if (!named.includes(entry) && !(address && isIP(address) && validBits))
      throw new Error(`"${entry}" is not an address, CIDR or one of ${named.join(', ')}`);
  }
  return entries;
}

/** METRICS_PORT: `main`, `off`, or a port (0: any free one). */
function metricsPort(raw: string): 'main' | 'off' | number {
  if (raw === 'main' || raw === 'off') return raw;
  if (!/^\d+$/.test(raw)) throw new Error('expected main, off, or a port number between 0 and 65535');
  return integer(0, 65535)(raw);
}

/**
 * A bearer token as RFC 6750 §2.1 writes it (b64token), long enough not to be guessed: Prometheus and
 * curl send it verbatim in the Authorization header.
 */
function metricsToken(raw: string): string {
  if (raw.length < 32) throw new Error('expected at least 32 characters');
  if (!/^[A-Za-z0-9\-._~+/]+=*$/.test(raw))
    throw new Error('expected letters, digits and - . _ ~ + / (a bearer token, RFC 6750 §2.1)');
  return raw;
}

/**
 * IP addresses and CIDR ranges, IPv4 or IPv6: each must be one node:net BlockList accepts, since that is
 * what checks them (http/ops/metrics-access.ts).
 */
function addressList(raw: string): string[] {
  const entries = raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (entries.length === 0) throw new Error('expected at least one IP address or CIDR range');
  for (const entry of entries) addToBlockList(new BlockList(), entry);
  return entries;
}

/** Adds one address or CIDR range to `list`; throws naming the entry when it is neither. */
export function addToBlockList(list: BlockList, entry: string): void {
  const [address, bits, extra] = entry.split('/');
  const family = address ? isIP(address) : 0;
  const type = family === 6 ? 'ipv6' : 'ipv4';
  const maxBits = family === 6 ? 128 : 32;
  const validBits = bits === undefined || (/^\d{1,3}$/.test(bits) && Number(bits) <= maxBits);
  if (!address || family === 0 || !validBits || extra !== undefined)
    throw new Error(`"${entry}" is not an IP address or CIDR range (such as 10.0.0.5, 10.0.0.0/8 or fd00::/8)`);
  if (bits === undefined) list.addAddress(address, type);
  else list.addSubnet(address, Number(bits), type);
}

/** One HTTP header token part such as `Service` or `Acme-Shop` (RFC 9110 §5.6.2, letters, digits, hyphens). */
function headerWord(raw: string): string {
  if (!/^[A-Za-z0-9]+(-[A-Za-z0-9]+)*$/.test(raw) || raw.length > 40)
    throw new Error('expected letters, digits and inner hyphens (e.g. Service or Acme-Shop)');
  return raw;
}

export const parsers = {
  metricsPort,
  metricsToken,
  addressList,
  duration,
  durationList,
  networkList,
  headerWord,
  boolean,
  aesKey,
  integer,
  oneOf,
  url,
  baseUrl,
  host,
  databaseUrl,
  redisUrl,
  trustProxy,
  algorithmList,
  originList,
  text,
};
