// Where callbacks may go (SSRF guard). Only public unicast addresses, unless the operator's allow-list
// names a network. The dispatcher resolves the host itself and connects to the very address it checked
// (the lookup result is the connection's address), so DNS rebinding between check and connect is moot.
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

const NAMED_RANGES: Record<string, string> = {
  loopback: 'loopback',
  private: 'private',
  linklocal: 'linkLocal',
  uniquelocal: 'uniqueLocal',
};

export class AddressPolicy {
  readonly #ranges: Set<string>;
  readonly #cidrs: [ipaddr.IPv4 | ipaddr.IPv6, number][];

  /** `allowed`: the WEBHOOK_ALLOWED_NETWORKS entries (names, addresses, CIDRs). */
  constructor(allowed: readonly string[]) {
    this.#ranges = new Set(allowed.filter((e) => NAMED_RANGES[e]).map((e) => NAMED_RANGES[e]!));
    this.#cidrs = allowed
      .filter((e) => !NAMED_RANGES[e])
      .map((e) =>
        e.includes('/') ? ipaddr.parseCIDR(e) : [ipaddr.parse(e), ipaddr.parse(e).kind() === 'ipv4' ? 32 : 128],
      );
  }

  /** Public unicast, or allowed by the operator. Metadata services (169.254.169.254, fd00:ec2::254) are link-local / unique-local. */
  allows(address: string): boolean {
    if (!ipaddr.isValid(address)) return false;
    const parsed = asIPv4IfEmbedded(ipaddr.parse(address));
    const range = parsed.range();
    if (range === 'unicast') return true;
    if (this.#ranges.has(range)) return true;
    return this.#cidrs.some(([network, bits]) => network.kind() === parsed.kind() && parsed.match(network, bits));
  }
}

/**
 * An IPv6 address that carries an IPv4 address is judged as that IPv4 address: IPv4-mapped (::ffff:a.b.c.d,
 * RFC 4291 §2.5.5.2) and the deprecated IPv4-compatible form (::a.b.c.d, §2.5.5.1), which ipaddr.js calls plain
 * unicast, so that `[::127.0.0.1]` is refused like 127.0.0.1. `::` and `::1` are IPv6's own addresses.
 */
function asIPv4IfEmbedded(address: ipaddr.IPv4 | ipaddr.IPv6): ipaddr.IPv4 | ipaddr.IPv6 {
  if (address.kind() === 'ipv4') return address;
  const v6 = address as ipaddr.IPv6;
  if (v6.isIPv4MappedAddress()) return v6.toIPv4Address();
  const parts = v6.parts;
  const embedsIPv4 = parts.slice(0, 6).every((part) => part === 0) && (parts[6] !== 0 || parts[7]! > 1);
  return embedsIPv4 ? ipaddr.fromByteArray(v6.toByteArray().slice(12)) : v6;
}

class RefusedAddressError extends Error {
  readonly code = 'ESSRF';
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** A `lookup` for net.connect that refuses the connection when any resolved address is not allowed. */
export function guardedLookup(policy: AddressPolicy) {
  return (hostname: string, options: { all?: boolean; family?: number }, callback: LookupCallback): void => {
    dnsLookup(hostname, { all: true, family: options.family ?? 0 }, (err, addresses) => {
      if (err) return callback(err, []);
      // The message reaches the endpoint's owner (the attempt log, the portal): it names their host, never
      // what this network's resolver answered for it (docs/security.md).
      if (addresses.some((a) => !policy.allows(a.address)))
        return callback(
          new RefusedAddressError(
            `${hostname} resolves to an address that is not public (WEBHOOK_ALLOWED_NETWORKS can allow it)`,
          ),
          [],
        );
      if (options.all) return callback(null, addresses);
      const first = addresses[0]!;
      callback(null, first.address, first.family);
    });
  };
}

/** An IP-literal host never goes through lookup, so it is checked here before connecting. */
export function literalAddressProblem(url: URL, policy: AddressPolicy): string | undefined {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host) && !policy.allows(host))
    return `${host} is not a public address (WEBHOOK_ALLOWED_NETWORKS can allow it)`;
  return undefined;
}

export interface UrlRules {
  allowHttp: boolean;
  policy: AddressPolicy;
}

/** Spaces, control characters and backslashes: the URL parser drops or rewrites them, so what was typed is not what is called. */
const SILENTLY_REPAIRED = /[\s\p{Cc}\\]/u;
/** RFC 1035 §2.3.4: 63 octets a label, 253 a name (without the root's trailing dot). */
const MAX_LABEL = 63;
const MAX_HOST = 253;

/**
 * Why a callback URL is refused at registration, or undefined. Host names are checked again at every
 * connection. Input the WHATWG parser would silently repair (whitespace, a missing `//`, an empty
 * `@` or `#`) is refused rather than guessed at; what it merely normalises (case, a default port, an
 * empty path) is stored as `callbackUrl` returns it, so the URL shown is the URL called.
 */
export function callbackUrlProblem(raw: string, rules: UrlRules): string | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'must be an absolute URL';
  }
  if (SILENTLY_REPAIRED.test(raw)) return 'must not contain spaces, control characters or backslashes';
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && rules.allowHttp))
    return rules.allowHttp
      ? 'must use https or http'
      : 'must use https (http is allowed only with WEBHOOK_ALLOW_HTTP, for development)';
  if (!/^https?:\/\/[^/]/i.test(raw)) return `must start with ${url.protocol}// and the host`;
  // Even an empty `user:@` or `@`: the parser drops it, so it could only be a mistake.
  if (url.username || url.password || /^https?:\/\/[^/?#]*@/i.test(raw))
    return 'must not contain credentials; the signature authenticates the sender';
  if (raw.includes('#')) return 'must not contain a fragment';
  if (url.port === '0') return 'must not use port 0';
  return hostNameProblem(url.hostname) ?? literalAddressProblem(url, rules.policy);
}

/** A name no resolver would answer for; IP literals are judged by the address policy. */
function hostNameProblem(hostname: string): string | undefined {
  if (hostname.startsWith('[') || isIP(hostname)) return undefined;
  const name = hostname.endsWith('.') ? hostname.slice(0, -1) : hostname;
  if (name.length > MAX_HOST) return `host name must be at most ${MAX_HOST} characters`;
  if (name.split('.').some((label) => label.length === 0 || label.length > MAX_LABEL))
    return `each label of the host name must be 1 to ${MAX_LABEL} characters`;
  return undefined;
}

/** The form stored and called, of a URL callbackUrlProblem accepted: the parser's own serialisation. */
export function callbackUrl(raw: string): string {
  return new URL(raw).href;
}
