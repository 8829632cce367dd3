// Client address and public origin behind trusted proxies: RFC 7239 `Forwarded`, else the de-facto
// X-Forwarded-For / -Proto / -Host / -Port headers. Only hops vouched for by trusted proxies are believed.
import { isIP } from 'node:net';
import proxyAddr from '@fastify/proxy-addr';
import parseForwarded from 'forwarded-parse';

export interface PeerRequest {
  remoteAddress: string;
  encrypted: boolean;
  headers: Record<string, string | string[] | undefined>;
}

/** Same contract as @fastify/proxy-addr compile(): hop 0 is the socket peer. */
export type TrustFn = (address: string, hopIndex: number) => boolean;

export interface ClientOrigin {
  ip: string;
  protocol: 'http' | 'https';
  /**
   * "name[:port]" or "[ipv6][:port]", lowercased, without the scheme's default port; null when no
   * valid host is known.
   */
  host: string | null;
}

/** What one proxy recorded about the hop before it; `proto`/`host`/`port` undefined when it did not say. */
interface Hop {
  node: string;
  proto: string | undefined;
  host: string | undefined;
  /** X-Forwarded-Port; RFC 7239 has no port parameter (a port goes into `host`). */
  port: string | undefined;
}

type Headers = PeerRequest['headers'];

export function compileTrust(setting: false | number | string[]): TrustFn {
  if (setting === false) return () => false;
  // proxy-addr has no hop-count mode; Fastify's trustProxy number means "trust the n nearest hops".
  if (typeof setting === 'number') return (_address, hop) => hop < setting;
  return proxyAddr.compile(setting);
}

// ---------------------------------------------------------------------------------------------
// Validation: the host ends up in Location headers and absolute links, so only plain authorities pass.
// ---------------------------------------------------------------------------------------------

const LABEL = '[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?';
const REG_NAME = new RegExp(`^${LABEL}(?:\\.${LABEL})*$`);
const AUTHORITY = /^(\[[0-9a-f:.]+\]|[^[\]:]+)(?::(\d{1,5}))?$/;

function validPort(port: string | undefined): boolean {
  return port === undefined || (Number(port) >= 1 && Number(port) <= 65535);
}

/** A port on its own (X-Forwarded-Port): 1-65535 in digits only, as in a URI authority (RFC 3986 §3.2.3). */
function normalizePort(value: string): string | null {
  return /^\d{1,5}$/.test(value) && validPort(value) ? String(Number(value)) : null;
}

/** Host = uri-host [ ":" port ] (RFC 9110 §7.2), restricted to DNS names, IPv4 and bracketed IPv6. */
export function normalizeHost(value: string | undefined): string | null {
  if (value === undefined) return null;
  const host = value.toLowerCase();
  const m = AUTHORITY.exec(host);
  if (!m || !validPort(m[2])) return null;
  const name = m[1]!;
  if (name.startsWith('[')) return isIP(name.slice(1, -1)) === 6 ? host : null;
  return name.length <= 253 && REG_NAME.test(name) ? host : null;
}

// OWS is only SP and HTAB (RFC 9110 §5.6.3); anything else stays and fails validation.
function trimOws(value: string): string {
  return value.replace(/^[ \t]+|[ \t]+$/g, '');
}

function normalizeProto(value: string | undefined): 'http' | 'https' | null {
  const proto = value?.toLowerCase();
  return proto === 'http' || proto === 'https' ? proto : null;
}

/**
 * Extracts the IP from a node identifier: "192.0.2.1", "192.0.2.1:80", "[2001:db8::1]:443" or
 * a bare IPv6 address (RFC 7239 §6). Obfuscated and "unknown" identifiers (§6.2, §6.3) give null.
 * IPv4-mapped IPv6 is reduced to IPv4 so logs and rate limits see one form per client.
 */
export function nodeAddress(node: string): string | null {
  let addr = trimOws(node);
  const bracketed = /^\[([^\]]+)\](?::\d{1,5})?$/.exec(addr);
  if (bracketed) addr = bracketed[1]!;
  else if (/^[\d.]+:\d{1,5}$/.test(addr)) addr = addr.slice(0, addr.lastIndexOf(':'));
  const family = isIP(addr);
  if (family === 0 || (bracketed && family !== 6)) return null;
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(addr);
  return mapped ? mapped[1]! : addr;
}

// ---------------------------------------------------------------------------------------------
// Header sources, each turned into hops ordered nearest proxy first (hops[0] describes hop 1).
// ---------------------------------------------------------------------------------------------

/** Multiple field lines form one comma-separated list (RFC 9110 §5.3). */
function joined(headers: Headers, name: string): string | undefined {
  const raw = headers[name];
  return Array.isArray(raw) ? raw.join(',') : raw;
}

function splitList(value: string | undefined): string[] {
  return value === undefined ? [] : value.split(',').map(trimOws);
}

/** RFC 7239 §4: one element per proxy, appended left to right. Null when absent or malformed. */
function forwardedHops(headers: Headers): Hop[] | null {
  const value = joined(headers, 'forwarded');
  if (value === undefined || value.trim() === '') return null;
  try {
    return parseForwarded(value)
      .map((el) => ({ node: el.for ?? 'unknown', proto: el.proto, host: el.host, port: undefined }))
      .reverse();
  } catch {
    return null; // a malformed Forwarded header is treated as absent rather than failing the request
  }
}

/** Value recorded at hop position `i` (0 = nearest), aligned with X-Forwarded-For when counts match. */
function alignedValue(values: string[], i: number, count: number): string | undefined {
  if (values.length === 0) return undefined;
  if (values.length === count) return values[count - 1 - i];
  return i === 0 ? values[values.length - 1] : undefined; // unaligned: only the last value is usable
}

function xForwardedHops(headers: Headers): Hop[] {
  const nodes = splitList(joined(headers, 'x-forwarded-for'));
  const protos = splitList(joined(headers, 'x-forwarded-proto'));
  const hosts = splitList(joined(headers, 'x-forwarded-host'));
  const ports = splitList(joined(headers, 'x-forwarded-port'));
  const count = Math.max(nodes.length, 1); // proto/host/port may come without any X-Forwarded-For
  return Array.from({ length: count }, (_, i) => ({
    node: nodes[nodes.length - 1 - i] ?? 'unknown',
    proto: alignedValue(protos, i, nodes.length),
    host: alignedValue(hosts, i, nodes.length),
    port: alignedValue(ports, i, nodes.length),
  }));
}

// ---------------------------------------------------------------------------------------------
// Chain walk
// ---------------------------------------------------------------------------------------------

/**
 * Walks right to left like proxy-addr: hop k+1 is believed only if hop k is trusted. Stops at the first
 * untrusted address, at the leftmost one, or at an identifier that is not an IP (then the last proxy
 * that vouched for it is the best address known). Returns the client's IP and the number of hops used.
 */
function walk(peer: string, hops: Hop[], trust: TrustFn): { ip: string; used: number } {
  let ip = peer;
  for (let k = 0; k < hops.length; k++) {
    if (!trust(ip, k)) return { ip, used: k };
    const next = nodeAddress(hops[k]!.node);
    if (next === null) return { ip, used: k + 1 };
    ip = next;
  }
  return { ip, used: hops.length };
}

/** First valid value, searching from the outermost believed hop towards the socket. */
function pick<T>(hops: Hop[], used: number, read: (hop: Hop) => T | null): T | null {
  for (let k = used - 1; k >= 0; k--) {
    const value = read(hops[k]!);
    if (value !== null) return value;
  }
  return null;
}

// ---------------------------------------------------------------------------------------------
// Authority: host and port. A port inside the forwarded host wins; otherwise X-Forwarded-Port supplies
// it. A port that is not 1-65535 makes the authority invalid, exactly like an invalid host: it is
// ignored and a nearer source (ultimately the Host header) is used instead.
// ---------------------------------------------------------------------------------------------

const PORT_SUFFIX = /:(\d{1,5})$/; // never matches a bare "[ipv6]", which ends in "]"

/** `host` (a Host or forwarded host value) with `port` added when the host names none; null if either is invalid. */
function withPort(host: string, port: string | undefined): string | null {
  const normalized = normalizeHost(host);
  if (normalized === null || port === undefined || PORT_SUFFIX.test(normalized)) return normalized;
  const valid = normalizePort(port);
  return valid === null ? null : `${normalized}:${valid}`;
}

/** What one hop says the public authority is; null when it named no host, or an invalid host or port. */
function hopAuthority(hop: Hop): string | null {
  return hop.host === undefined ? null : withPort(hop.host, hop.port);
}

const DEFAULT_PORTS = { http: 80, https: 443 } as const;

/** RFC 3986 §6.2.3: the scheme's default port is left out, so equal URLs are spelled alike. */
function withoutDefaultPort(protocol: 'http' | 'https', host: string | null): string | null {
  if (host === null) return null;
  const port = PORT_SUFFIX.exec(host);
  return port && Number(port[1]) === DEFAULT_PORTS[protocol] ? host.slice(0, port.index) : host;
}

/**
 * The Host header under the same rule as forwarded hosts. In the app a request with a missing,
 * repeated or invalid Host never gets here (malformed.ts answers 400, RFC 9112 §3.2; Node would
 * keep only the first of several lines); null stays the answer for callers without that check.
 */
function directHost(headers: Headers): string | null {
  const host = headers.host;
  return typeof host === 'string' ? normalizeHost(host) : null;
}

function origin(ip: string, protocol: 'http' | 'https', host: string | null): ClientOrigin {
  return { ip, protocol, host: withoutDefaultPort(protocol, host) };
}

function direct(req: PeerRequest, ip: string): ClientOrigin {
  return origin(ip, req.encrypted ? 'https' : 'http', directHost(req.headers));
}

/**
 * The Host header the trusted nearest proxy sent, with the X-Forwarded-Port it recorded (nginx's
 * `$host` has no port, `$server_port` does). An invalid port is ignored as an invalid forwarded host is.
 */
function proxiedHost(req: PeerRequest, hops: Hop[], used: number): string | null {
  const host = directHost(req.headers);
  if (host === null || used === 0) return host;
  // The port of the same (outermost believed) hop the scheme is taken from, so they never mix:
  // `X-Forwarded-Proto: https, http` with `X-Forwarded-Port: 443, 80` is https on 443.
  return pick(hops, used, (hop) => (hop.port === undefined ? null : withPort(host, hop.port))) ?? host;
}

export function resolveClientOrigin(req: PeerRequest, trust: TrustFn): ClientOrigin {
  const peer = nodeAddress(req.remoteAddress) ?? req.remoteAddress;
  if (!trust(peer, 0)) return direct(req, peer);
  const hops = forwardedHops(req.headers) ?? xForwardedHops(req.headers);
  const { ip, used } = walk(peer, hops, trust);
  return origin(
    ip,
    pick(hops, used, (hop) => normalizeProto(hop.proto)) ?? (req.encrypted ? 'https' : 'http'),
    pick(hops, used, hopAuthority) ?? proxiedHost(req, hops, used),
  );
}
