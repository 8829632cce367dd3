// Value parsers for configuration settings. Each throws an Error whose message says what is expected;
// loadConfig prefixes it with the variable name.
import { isIP } from 'node:net';

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

/** A base URL: no query, no fragment; a trailing slash is dropped so paths can be appended. */
function baseUrl(raw: string): string {
  const value = url(raw);
  const parsed = new URL(value);
  if (parsed.search || parsed.hash || parsed.username) throw new Error('expected a base URL without query, fragment or credentials');
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
  const entries = value.split(',').map((s) => s.trim()).filter(Boolean);
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
    const list = raw.split(',').map((s) => s.trim()).filter(Boolean);
    for (const alg of list) {
      if (!allowed.includes(alg)) throw new Error(`"${alg}" is not allowed; choose from ${allowed.join(', ')}`);
    }
    if (list.length === 0) throw new Error('expected at least one algorithm');
    return list;
  };
}

function originList(raw: string): string[] {
  return raw.split(',').map((s) => s.trim()).filter(Boolean).map((origin) => {
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

export const parsers = { boolean, aesKey, integer, oneOf, url, baseUrl, host, databaseUrl, redisUrl, trustProxy, algorithmList, originList, text };
