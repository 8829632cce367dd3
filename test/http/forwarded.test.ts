import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { compileTrust, nodeAddress, normalizeHost, resolveClientOrigin } from '../../src/http/admission/forwarded.ts';
import type { PeerRequest } from '../../src/http/admission/forwarded.ts';

function req(remoteAddress: string, headers: PeerRequest['headers'], encrypted = false): PeerRequest {
  return { remoteAddress, encrypted, headers: { host: 'internal.svc:8080', ...headers } };
}

const loopback = compileTrust(['loopback']);

describe('compileTrust', () => {
  it('trusts nothing for false', () => {
    assert.equal(compileTrust(false)('127.0.0.1', 0), false);
  });

  it('trusts exactly the given number of nearest hops', () => {
    const two = compileTrust(2);
    assert.deepEqual(
      [0, 1, 2].map((hop) => two('203.0.113.9', hop)),
      [true, true, false],
    );
  });

  it('accepts addresses, CIDRs and named ranges, including IPv4-mapped peers', () => {
    const trust = compileTrust(['10.0.0.0/8', '192.0.2.7', 'loopback']);
    assert.equal(trust('10.20.30.40', 0), true);
    assert.equal(trust('192.0.2.7', 0), true);
    assert.equal(trust('::ffff:127.0.0.1', 0), true);
    assert.equal(trust('192.0.2.8', 0), false);
  });

  it('rejects a malformed address list at compile time', () => {
    assert.throws(() => compileTrust(['not-an-ip']), TypeError);
  });
});

describe('resolveClientOrigin: untrusted peer', () => {
  it('ignores every forwarding header from an untrusted peer', () => {
    const origin = resolveClientOrigin(
      req('203.0.113.5', {
        forwarded: 'for=1.1.1.1;proto=https;host=evil.example',
        'x-forwarded-for': '1.1.1.1',
        'x-forwarded-proto': 'https',
        'x-forwarded-host': 'evil.example',
      }),
      loopback,
    );
    assert.deepEqual(origin, { ip: '203.0.113.5', protocol: 'http', host: 'internal.svc:8080' });
  });

  it('takes the protocol from the TLS state of the socket', () => {
    assert.equal(resolveClientOrigin(req('203.0.113.5', {}, true), compileTrust(false)).protocol, 'https');
  });

  it('strips the IPv4-mapped IPv6 prefix from the peer address', () => {
    assert.equal(resolveClientOrigin(req('::ffff:203.0.113.5', {}), loopback).ip, '203.0.113.5');
  });

  it('reports no host when the Host header is missing, invalid or repeated', () => {
    const none = { remoteAddress: '203.0.113.5', encrypted: false, headers: {} };
    assert.equal(resolveClientOrigin(none, loopback).host, null);
    assert.equal(resolveClientOrigin(req('203.0.113.5', { host: 'a b' }), loopback).host, null);
    assert.equal(resolveClientOrigin(req('203.0.113.5', { host: ['a.example', 'b.example'] }), loopback).host, null);
  });
});

describe('resolveClientOrigin: X-Forwarded-*', () => {
  it('takes client, protocol and host from a trusted peer', () => {
    const origin = resolveClientOrigin(
      req('127.0.0.1', {
        'x-forwarded-for': '198.51.100.4',
        'x-forwarded-proto': 'https',
        'x-forwarded-host': 'API.Example.com',
      }),
      loopback,
    );
    assert.deepEqual(origin, { ip: '198.51.100.4', protocol: 'https', host: 'api.example.com' });
  });

  it('stops at the first untrusted address walking right to left', () => {
    const trust = compileTrust(['10.0.0.0/8', 'loopback']);
    const headers = { 'x-forwarded-for': '1.1.1.1, 198.51.100.4, 10.0.0.2' };
    assert.equal(resolveClientOrigin(req('127.0.0.1', headers), trust).ip, '198.51.100.4');
  });

  it('does not skip over an untrusted middle hop', () => {
    const trust = compileTrust(['10.0.0.0/8', 'loopback']);
    const headers = { 'x-forwarded-for': '10.9.9.9, 198.51.100.4, 10.0.0.2' };
    assert.equal(resolveClientOrigin(req('127.0.0.1', headers), trust).ip, '198.51.100.4');
  });

  it('honours a hop count', () => {
    const headers = { 'x-forwarded-for': '1.1.1.1, 2.2.2.2, 3.3.3.3' };
    assert.equal(resolveClientOrigin(req('203.0.113.5', headers), compileTrust(1)).ip, '3.3.3.3');
    assert.equal(resolveClientOrigin(req('203.0.113.5', headers), compileTrust(2)).ip, '2.2.2.2');
    assert.equal(resolveClientOrigin(req('203.0.113.5', headers), compileTrust(9)).ip, '1.1.1.1');
  });

  it('joins multiple header lines into one chain', () => {
    const headers = { 'x-forwarded-for': ['1.1.1.1', '2.2.2.2, 3.3.3.3'] };
    assert.equal(resolveClientOrigin(req('127.0.0.1', headers), compileTrust(2)).ip, '2.2.2.2');
  });

  it('uses proto and host at the client hop position when the counts line up', () => {
    const headers = {
      'x-forwarded-for': '198.51.100.4, 10.0.0.2',
      'x-forwarded-proto': 'https, http',
      'x-forwarded-host': 'public.example, lb.internal',
    };
    const origin = resolveClientOrigin(req('127.0.0.1', headers), compileTrust(['10.0.0.0/8', 'loopback']));
    assert.deepEqual(origin, { ip: '198.51.100.4', protocol: 'https', host: 'public.example' });
  });

  it('uses the nearer hop position when the client hop is not trusted further', () => {
    const headers = {
      'x-forwarded-for': '198.51.100.4, 10.0.0.2',
      'x-forwarded-proto': 'https, http',
      'x-forwarded-host': 'public.example, lb.internal',
    };
    const origin = resolveClientOrigin(req('127.0.0.1', headers), loopback);
    assert.deepEqual(origin, { ip: '10.0.0.2', protocol: 'http', host: 'lb.internal' });
  });

  it('uses the last value when the counts do not line up', () => {
    const headers = { 'x-forwarded-for': '198.51.100.4, 10.0.0.2', 'x-forwarded-proto': 'http, https, https' };
    const origin = resolveClientOrigin(req('127.0.0.1', headers), compileTrust(['10.0.0.0/8', 'loopback']));
    assert.equal(origin.protocol, 'https');
  });

  it('accepts proto and host without X-Forwarded-For', () => {
    const headers = { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'public.example' };
    assert.deepEqual(resolveClientOrigin(req('127.0.0.1', headers), loopback), {
      ip: '127.0.0.1',
      protocol: 'https',
      host: 'public.example',
    });
  });

  it('stops at a garbage entry and keeps the proxy that reported it', () => {
    const headers = { 'x-forwarded-for': '1.1.1.1, not-an-ip, 10.0.0.2' };
    const trust = compileTrust(9);
    assert.equal(resolveClientOrigin(req('127.0.0.1', headers), trust).ip, '10.0.0.2');
  });
});

describe('resolveClientOrigin: Forwarded (RFC 7239)', () => {
  it('takes client, protocol and host from the element for the client hop', () => {
    const headers = { forwarded: 'for=198.51.100.4;proto=https;host=public.example' };
    assert.deepEqual(resolveClientOrigin(req('127.0.0.1', headers), loopback), {
      ip: '198.51.100.4',
      protocol: 'https',
      host: 'public.example',
    });
  });

  it('reads quoted IPv6 node identifiers with ports and IPv4 with ports', () => {
    const trust = compileTrust(['2001:db8::/32', 'loopback']);
    const headers = { forwarded: 'for="192.0.2.60:4711", for="[2001:db8:cafe::17]:47011"' };
    assert.equal(resolveClientOrigin(req('::1', headers), trust).ip, '192.0.2.60');
  });

  it('is preferred over X-Forwarded-*', () => {
    const headers = {
      forwarded: 'for=198.51.100.4;proto=http',
      'x-forwarded-for': '1.1.1.1',
      'x-forwarded-proto': 'https',
      'x-forwarded-host': 'xfh.example',
    };
    assert.deepEqual(resolveClientOrigin(req('127.0.0.1', headers), loopback), {
      ip: '198.51.100.4',
      protocol: 'http',
      host: 'internal.svc:8080',
    });
  });

  it('falls back to nearer elements for a missing protocol or host', () => {
    const trust = compileTrust(['10.0.0.0/8', 'loopback']);
    const headers = {
      forwarded: ['for=198.51.100.4;host=public.example', 'for=10.0.0.2;proto=https;host=lb.internal'],
    };
    assert.deepEqual(resolveClientOrigin(req('127.0.0.1', headers), trust), {
      ip: '198.51.100.4',
      protocol: 'https',
      host: 'public.example',
    });
  });

  it('ignores what the untrusted middle hop wrote', () => {
    const trust = compileTrust(['10.0.0.0/8', 'loopback']);
    const forwarded = 'for=1.1.1.1;host=evil.example, for=198.51.100.4;host=public.example;proto=https, for=10.0.0.2';
    assert.deepEqual(resolveClientOrigin(req('127.0.0.1', { forwarded }), trust), {
      ip: '198.51.100.4',
      protocol: 'https',
      host: 'public.example',
    });
  });

  it('keeps the reporting proxy as client address for "unknown" and obfuscated nodes', () => {
    const trust = compileTrust(9);
    assert.equal(
      resolveClientOrigin(req('127.0.0.1', { forwarded: 'for=unknown;proto=https' }), trust).ip,
      '127.0.0.1',
    );
    assert.equal(
      resolveClientOrigin(req('127.0.0.1', { forwarded: 'for=_hidden, for=10.0.0.2' }), trust).ip,
      '10.0.0.2',
    );
  });

  it('treats a malformed header as absent and falls back to X-Forwarded-*', () => {
    const headers = { forwarded: 'for="unterminated', 'x-forwarded-for': '198.51.100.4' };
    assert.equal(resolveClientOrigin(req('127.0.0.1', headers), loopback).ip, '198.51.100.4');
    assert.equal(resolveClientOrigin(req('127.0.0.1', { forwarded: 'for=1.1.1.1;;' }), loopback).ip, '127.0.0.1');
  });
});

describe('resolveClientOrigin: ports (X-Forwarded-Port, a port in the forwarded host)', () => {
  const hostOf = (headers: PeerRequest['headers'], trust = loopback) =>
    resolveClientOrigin(req('127.0.0.1', headers), trust).host;

  it('adds X-Forwarded-Port to an X-Forwarded-Host without a port (nginx: $host and $server_port)', () => {
    assert.equal(hostOf({ 'x-forwarded-host': 'api.example.com', 'x-forwarded-port': '8080' }), 'api.example.com:8080');
  });

  it('lets a port inside X-Forwarded-Host win over X-Forwarded-Port', () => {
    assert.equal(
      hostOf({ 'x-forwarded-host': 'api.example.com:8443', 'x-forwarded-port': '8080' }),
      'api.example.com:8443',
    );
    assert.equal(
      hostOf({ 'x-forwarded-host': '[2001:db8::1]:8443', 'x-forwarded-port': '8080' }),
      '[2001:db8::1]:8443',
    );
  });

  it('adds X-Forwarded-Port to a bracketed IPv6 forwarded host', () => {
    assert.equal(hostOf({ 'x-forwarded-host': '[2001:db8::1]', 'x-forwarded-port': '8080' }), '[2001:db8::1]:8080');
  });

  it('adds X-Forwarded-Port to the Host header the trusted proxy sent when it sent no X-Forwarded-Host', () => {
    assert.equal(hostOf({ host: 'api.example.com', 'x-forwarded-port': '8080' }), 'api.example.com:8080');
    assert.equal(hostOf({ host: 'api.example.com:9000', 'x-forwarded-port': '8080' }), 'api.example.com:9000');
  });

  it('takes the port from the same hop as the scheme when two trusted proxies recorded both', () => {
    // An outer TLS load balancer (https on 443) in front of an inner proxy (http on 80), both trusted.
    const origin = resolveClientOrigin(
      req('127.0.0.1', {
        host: 'api.example.com',
        'x-forwarded-for': '203.0.113.9, 10.0.0.2',
        'x-forwarded-proto': 'https, http',
        'x-forwarded-port': '443, 80',
      }),
      compileTrust(['loopback', '10.0.0.0/8']),
    );
    assert.equal(`${origin.protocol}://${origin.host}`, 'https://api.example.com');
  });

  it("omits the scheme's default port, wherever the port came from", () => {
    const cases: [PeerRequest['headers'], string, string][] = [
      [
        { 'x-forwarded-proto': 'http', 'x-forwarded-host': 'api.example.com', 'x-forwarded-port': '80' },
        'http',
        'api.example.com',
      ],
      [
        { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'api.example.com', 'x-forwarded-port': '443' },
        'https',
        'api.example.com',
      ],
      [{ 'x-forwarded-proto': 'https', 'x-forwarded-host': 'api.example.com:443' }, 'https', 'api.example.com'],
      [
        { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'api.example.com', 'x-forwarded-port': '80' },
        'https',
        'api.example.com:80',
      ],
      [
        { 'x-forwarded-proto': 'http', 'x-forwarded-host': 'api.example.com', 'x-forwarded-port': '443' },
        'http',
        'api.example.com:443',
      ],
      [{ forwarded: 'proto=https;host="api.example.com:443"' }, 'https', 'api.example.com'],
      [{ forwarded: 'proto=https;host="[2001:db8::1]:443"' }, 'https', '[2001:db8::1]'],
    ];
    for (const [headers, protocol, host] of cases) {
      const origin = resolveClientOrigin(req('127.0.0.1', headers), loopback);
      assert.deepEqual([origin.protocol, origin.host], [protocol, host], JSON.stringify(headers));
    }
  });

  it('normalizes leading zeros of X-Forwarded-Port', () => {
    assert.equal(
      hostOf({ 'x-forwarded-host': 'api.example.com', 'x-forwarded-port': '08080' }),
      'api.example.com:8080',
    );
  });

  for (const port of ['0', '65536', '99999', '123456', '-1', '+80', '80a', '8 0', '0x50', '', '80.0', '\u0661\u0662']) {
    it(`refuses X-Forwarded-Port ${JSON.stringify(port)} as an invalid forwarded host is refused: the Host header is used`, () => {
      assert.equal(hostOf({ 'x-forwarded-host': 'api.example.com', 'x-forwarded-port': port }), 'internal.svc:8080');
      assert.equal(hostOf({ host: 'api.example.com', 'x-forwarded-port': port }), 'api.example.com');
    });
  }

  it('takes the port at the same hop position as the host when X-Forwarded-For lines up', () => {
    const trust = compileTrust(['10.0.0.0/8', 'loopback']);
    const headers = {
      'x-forwarded-for': '198.51.100.4, 10.0.0.2',
      'x-forwarded-host': 'public.example, lb.internal',
      'x-forwarded-port': '8443, 8080',
    };
    assert.equal(hostOf(headers, trust), 'public.example:8443');
    assert.equal(hostOf(headers, loopback), 'lb.internal:8080');
  });

  it('falls back to a nearer hop when the outer hop names an invalid port', () => {
    const trust = compileTrust(['10.0.0.0/8', 'loopback']);
    const headers = {
      'x-forwarded-for': '198.51.100.4, 10.0.0.2',
      'x-forwarded-host': 'public.example, lb.internal',
      'x-forwarded-port': '99999, 8080',
    };
    assert.equal(hostOf(headers, trust), 'lb.internal:8080');
  });

  it('ignores X-Forwarded-Port when Forwarded is present (RFC 7239 carries the port inside host)', () => {
    assert.equal(hostOf({ forwarded: 'host=api.example.com', 'x-forwarded-port': '8080' }), 'api.example.com');
    assert.equal(hostOf({ forwarded: 'host="api.example.com:8080"' }), 'api.example.com:8080');
  });

  it('ignores X-Forwarded-Port from an untrusted peer', () => {
    const origin = resolveClientOrigin(
      req('203.0.113.5', { host: 'api.example.com', 'x-forwarded-host': 'a.example', 'x-forwarded-port': '8080' }),
      loopback,
    );
    assert.equal(origin.host, 'api.example.com');
  });
});

describe('resolveClientOrigin: injection attempts', () => {
  const hostile = [
    'evil.example\r\nSet-Cookie: x=1',
    'evil.example/path',
    'user@evil.example',
    'evil.example extra',
    'evil.example:99999',
    'evil.example:0',
    'evil.example:',
    '[::1',
    '[fe80::1%25eth0]',
    '[not-ipv6]',
    'evil..example',
    '-evil.example',
    'javascript:alert(1)',
    '',
  ];

  for (const host of hostile) {
    it(`rejects forwarded host ${JSON.stringify(host)} and falls back to the Host header`, () => {
      const origin = resolveClientOrigin(req('127.0.0.1', { 'x-forwarded-host': host }), loopback);
      assert.equal(origin.host, 'internal.svc:8080');
    });
  }

  it('rejects a quoted Forwarded host carrying a path', () => {
    const origin = resolveClientOrigin(req('127.0.0.1', { forwarded: 'for=1.1.1.1;host="evil.example/x"' }), loopback);
    assert.equal(origin.host, 'internal.svc:8080');
  });

  it('ignores protocols other than http and https', () => {
    for (const proto of ['javascript', 'ftp', 'https\r\n', 'https, ', 'https;x']) {
      const origin = resolveClientOrigin(req('127.0.0.1', { 'x-forwarded-proto': proto }), loopback);
      assert.equal(origin.protocol, 'http', proto);
    }
  });
});

describe('normalizeHost and nodeAddress', () => {
  it('accepts names, IPv4 and bracketed IPv6 with optional ports', () => {
    for (const host of ['example.com', 'localhost:3000', 'my_service', '192.0.2.1:80', '[2001:db8::1]', '[::1]:8443']) {
      assert.equal(normalizeHost(host), host);
    }
  });

  it('extracts plain IPs from node identifiers and rejects the rest', () => {
    assert.equal(nodeAddress('[2001:db8::1]:443'), '2001:db8::1');
    assert.equal(nodeAddress('2001:db8::1'), '2001:db8::1');
    assert.equal(nodeAddress('192.0.2.1:80'), '192.0.2.1');
    assert.equal(nodeAddress('[::ffff:192.0.2.1]'), '192.0.2.1');
    for (const bad of ['unknown', '_hidden', '[192.0.2.1]', '192.0.2.1\r\n', '1.2.3']) {
      assert.equal(nodeAddress(bad), null, bad);
    }
  });
});
