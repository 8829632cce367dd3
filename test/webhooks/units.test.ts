// Unit tests of the webhook building blocks: the SSRF address policy and callback URL rules, secret
// format and sealing, the secret key file, the retry schedule, the signatures (checked against
// @octokit/webhooks-methods and standardwebhooks) and the WEBHOOK_* / EVENT_RETENTION settings.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { sign as githubSign, verify as githubVerify } from '@octokit/webhooks-methods';
import { Webhook } from 'standardwebhooks';
import { loadConfig } from '../../src/config/config.ts';
import {
  AddressPolicy,
  callbackUrl,
  callbackUrlProblem,
  guardedLookup,
  literalAddressProblem,
} from '../../src/webhooks/delivery/address-policy.ts';
import { storableText } from '../../src/webhooks/delivery/callback-client.ts';
import { firstDelay, jittered, nextRetryDelay, parseRetryAfter } from '../../src/webhooks/delivery/retry-policy.ts';
import {
  generateSecret,
  resolveSecretKey,
  SecretBox,
  SecretKeyError,
  secretProblem,
  standardWebhooksKey,
} from '../../src/webhooks/store/secrets.ts';
import {
  deliveryBody,
  githubSignature,
  signatureHeaders,
  SigningSecret,
  standardSignature,
} from '../../src/webhooks/delivery/signing.ts';
import { withDeadline } from '../helpers/deadline.ts';

const secretOf = (bytes: number, fill = 1) => `whsec_${Buffer.alloc(bytes, fill).toString('base64')}`;

describe('AddressPolicy', () => {
  const strict = new AddressPolicy([]);

  test('allows public unicast addresses only by default', () => {
    for (const address of ['93.184.216.34', '8.8.8.8', '1.1.1.1', '2606:4700:4700::1111', '2a00:1450:4001:80b::200e'])
      assert.equal(strict.allows(address), true, address);
    const refused = [
      '127.0.0.1',
      '127.255.255.254',
      '::1', // loopback
      '10.0.0.1',
      '172.16.5.4',
      '172.31.255.255',
      '192.168.0.10', // private
      '169.254.169.254',
      'fe80::1', // link-local (cloud metadata)
      'fd00:ec2::254',
      'fc00::1', // unique local (AWS IPv6 metadata)
      '100.64.0.1', // carrier-grade NAT
      '0.0.0.0',
      '::',
      '255.255.255.255',
      '224.0.0.1',
      'ff02::1',
      '192.0.2.1',
      '2001:db8::1',
      '::ffff:127.0.0.1',
      '::ffff:10.0.0.1',
      '::ffff:169.254.169.254', // IPv4-mapped
      '::127.0.0.1',
      '::7f00:1',
      '::10.0.0.1',
      '::169.254.169.254', // IPv4-compatible (RFC 4291 §2.5.5.1), judged as the IPv4 address it carries
      '64:ff9b::a00:1',
      '2002:a00:1::', // NAT64 and 6to4 wrapping 10.0.0.1
    ];
    for (const address of refused) assert.equal(strict.allows(address), false, address);
    for (const notAnAddress of ['', 'localhost', 'example.com', '999.1.1.1', '10.0.0.1:80'])
      assert.equal(strict.allows(notAnAddress), false, notAnAddress);
  });

  test('an IPv4-compatible IPv6 address is judged as its IPv4 address, both ways', () => {
    assert.equal(new AddressPolicy([]).allows('::8.8.8.8'), true, 'a public IPv4 address stays public');
    assert.equal(new AddressPolicy(['loopback']).allows('::127.0.0.1'), true, 'allowed where 127.0.0.1 is');
    assert.equal(new AddressPolicy(['private']).allows('::10.1.2.3'), true, 'allowed where 10.1.2.3 is');
  });

  test('named networks allow exactly their range', () => {
    const loopback = new AddressPolicy(['loopback']);
    for (const address of ['127.0.0.1', '127.8.9.10', '::1', '::ffff:127.0.0.1'])
      assert.equal(loopback.allows(address), true, address);
    for (const address of ['10.0.0.1', '169.254.169.254', 'fd00::1'])
      assert.equal(loopback.allows(address), false, address);
    assert.equal(loopback.allows('8.8.8.8'), true, 'public stays allowed');

    const cases: [string, string[], string[]][] = [
      ['private', ['10.1.2.3', '172.20.0.1', '192.168.1.1'], ['127.0.0.1', '169.254.169.254', 'fd00::1']],
      ['linklocal', ['169.254.169.254', 'fe80::1'], ['10.0.0.1', '127.0.0.1']],
      ['uniquelocal', ['fd00:ec2::254', 'fc00::1'], ['::1', '10.0.0.1']],
    ];
    for (const [name, allowed, refused] of cases) {
      const policy = new AddressPolicy([name]);
      for (const address of allowed) assert.equal(policy.allows(address), true, `${name}: ${address}`);
      for (const address of refused) assert.equal(policy.allows(address), false, `${name}: ${address}`);
    }
  });

  test('addresses and CIDRs allow exactly what they cover, per address family', () => {
    const policy = new AddressPolicy(['10.20.0.0/16', '192.168.1.5', 'fd12:3456::/32', 'fe80::7']);
    for (const address of ['10.20.0.1', '10.20.255.255', '192.168.1.5', '::ffff:10.20.3.4', 'fd12:3456::1', 'fe80::7'])
      assert.equal(policy.allows(address), true, address);
    for (const address of ['10.21.0.1', '10.0.0.1', '192.168.1.6', 'fd12:3457::1', 'fe80::8', '127.0.0.1'])
      assert.equal(policy.allows(address), false, address);
    const v4 = new AddressPolicy(['0.0.0.0/0']);
    assert.equal(v4.allows('10.0.0.1'), true);
    assert.equal(v4.allows('fd00::1'), false, 'an IPv4 network never matches an IPv6 address');
  });
});

describe('callbackUrlProblem', () => {
  const strict = { allowHttp: false, policy: new AddressPolicy([]) };
  const dev = { allowHttp: true, policy: new AddressPolicy(['loopback']) };

  test('accepts https URLs to public hosts; http only when allowed', () => {
    for (const url of [
      'https://example.com/hook',
      'https://example.com:8443/a/b?x=1',
      'https://93.184.216.34/hook',
      'https://[2606:4700::1111]/hook',
    ])
      assert.equal(callbackUrlProblem(url, strict), undefined, url);
    assert.match(callbackUrlProblem('http://example.com/hook', strict)!, /https/);
    assert.equal(callbackUrlProblem('http://example.com/hook', dev), undefined);
    assert.equal(callbackUrlProblem('http://127.0.0.1:8080/hook', dev), undefined);
    assert.equal(
      callbackUrlProblem('https://localhost/hook', strict),
      undefined,
      'host names are checked when connecting, not here',
    );
  });

  test('refuses what is not an absolute http(s) URL, credentials and fragments', () => {
    const cases: [string, RegExp][] = [
      ['not a url', /absolute URL/],
      ['/relative/path', /absolute URL/],
      ['ftp://example.com/x', /https/],
      ['javascript:alert(1)', /https/],
      ['file:///etc/passwd', /https/],
      ['https://user:pass@example.com/hook', /credentials/],
      ['https://user@example.com/hook', /credentials/],
      ['https://example.com/hook#frag', /fragment/],
    ];
    for (const [url, problem] of cases) assert.match(callbackUrlProblem(url, dev) ?? '(accepted)', problem, url);
    assert.match(callbackUrlProblem('ftp://example.com/x', dev)!, /https or http/);
  });

  test('refuses what the URL parser would silently repair, so the URL stored is the one typed', () => {
    const cases: [string, RegExp][] = [
      ['  http://127.0.0.1:8080/ok-ws  ', /spaces/],
      ['http://127.0.0.1:8080/o\nk-nl', /control characters/],
      ['http://127.0.0.1:8080/\tx', /control characters/],
      ['https://exa\tmple.com/x', /control characters/],
      ['https://example.com/x\u0000', /control characters/],
      ['https://example.com/a b', /spaces/],
      ['https://example.com\\@evil.example/', /backslashes/],
      ['http:127.0.0.1:8080/x', /must start with http:\/\//],
      ['https:/example.com/x', /must start with https:\/\//],
      ['https:///example.com/x', /must start with https:\/\//],
      ['http://@127.0.0.1:8080/x', /credentials/],
      ['https://:@example.com/x', /credentials/],
      ['https://example.com/x#', /fragment/],
    ];
    for (const [url, problem] of cases)
      assert.match(callbackUrlProblem(url, dev) ?? '(accepted)', problem, JSON.stringify(url));
  });

  test('refuses hosts and ports that can never be reached: port 0, names over 253 characters or labels over 63', () => {
    const label = (n: number) => 'a'.repeat(n);
    assert.match(callbackUrlProblem('https://example.com:0/x', strict) ?? '(accepted)', /port 0/);
    assert.match(callbackUrlProblem(`https://${label(64)}.example.com/x`, strict) ?? '(accepted)', /label/);
    assert.match(callbackUrlProblem('https://a..example.com/x', strict) ?? '(accepted)', /label/);
    const long = Array.from({ length: 5 }, () => label(60)).join('.'); // 304 characters
    assert.match(callbackUrlProblem(`https://${long}/x`, strict) ?? '(accepted)', /at most 253/);
    for (const url of [
      `https://${label(63)}.example.com/x`,
      `https://${Array.from({ length: 4 }, () => label(62)).join('.')}/x`,
      'https://example.com./x',
      'https://example.com:1/x',
    ]) {
      assert.equal(callbackUrlProblem(url, strict), undefined, url);
    }
  });

  test('what the parser only normalises is accepted and stored as it serialises it, which is what is called', () => {
    const cases: [string, string][] = [
      ['https://example.com/hook', 'https://example.com/hook'],
      ['https://example.com', 'https://example.com/'],
      ['HTTPS://Example.COM:443/a/../hook', 'https://example.com/hook'],
      ['https://bücher.example/hook', 'https://xn--bcher-kva.example/hook'],
      ['https://example.com/a%20b?x=1', 'https://example.com/a%20b?x=1'],
    ];
    for (const [raw, stored] of cases) {
      assert.equal(callbackUrlProblem(raw, strict), undefined, raw);
      assert.equal(callbackUrl(raw), stored, raw);
    }
  });

  test('refuses literal non-public addresses in every spelling the URL parser normalizes', () => {
    const hosts = [
      '127.0.0.1',
      '2130706433',
      '0x7f.1',
      '127.1',
      '0177.0.0.1',
      '[::1]',
      '[::ffff:127.0.0.1]',
      '[::127.0.0.1]',
      '[0:0:0:0:0:0:0:1]',
      '169.254.169.254',
      '[fd00:ec2::254]',
      '10.0.0.1',
      '0.0.0.0',
      '[::]',
    ];
    for (const host of hosts)
      assert.match(callbackUrlProblem(`https://${host}/hook`, strict) ?? '(accepted)', /not a public address/, host);
    assert.equal(
      callbackUrlProblem('https://[::1]:8443/hook', { allowHttp: false, policy: new AddressPolicy(['loopback']) }),
      undefined,
    );
    assert.equal(literalAddressProblem(new URL('https://example.com/'), strict.policy), undefined);
    assert.match(literalAddressProblem(new URL('https://[::1]/'), strict.policy)!, /::1/);
  });
});

describe('storableText', () => {
  test('replaces U+0000 and lone surrogates (which PostgreSQL text and jsonb refuse) with U+FFFD, and nothing else', () => {
    assert.equal(storableText('ok\u0000'), 'ok\uFFFD');
    assert.equal(storableText('a\ud800b\udc00'), 'a\uFFFDb\uFFFD');
    const fine = 'tab\there, new\nline, \u{1F600}, ünïcode';
    assert.equal(storableText(fine), fine);
  });
});

describe('guardedLookup', () => {
  const lookup = (policy: AddressPolicy, host: string, all: boolean) =>
    withDeadline(
      new Promise<{ err: NodeJS.ErrnoException | null; address: unknown }>((resolve) =>
        guardedLookup(policy)(host, { all }, (err, address) => resolve({ err, address })),
      ),
      10_000,
      `resolving ${host} (all: ${all})`,
    );

  test('refuses a host name that resolves to a non-public address (code ESSRF)', async () => {
    for (const all of [true, false]) {
      const { err } = await lookup(new AddressPolicy([]), 'localhost', all);
      assert.equal(err?.code, 'ESSRF');
      assert.match(err!.message, /^localhost resolves to an address that is not public/);
      // The resolver's answer is this network's business, not the endpoint owner's: no address in the message.
      assert.doesNotMatch(err!.message, /127\.0\.0\.1|::1|\d+\.\d+\.\d+\.\d+/);
    }
  });

  test('answers with the checked addresses when they are allowed', async () => {
    const policy = new AddressPolicy(['loopback']);
    const all = await lookup(policy, 'localhost', true);
    assert.equal(all.err, null);
    const addresses = all.address as { address: string; family: number }[];
    assert.ok(Array.isArray(addresses) && addresses.length > 0);
    for (const a of addresses) assert.ok(policy.allows(a.address), a.address);
    const one = await lookup(policy, 'localhost', false);
    assert.equal(one.err, null);
    assert.equal(typeof one.address, 'string');
    assert.ok(policy.allows(one.address as string));
  });
});

describe('secrets', () => {
  test('generated secrets are whsec_ + base64 of 32 random bytes, and valid', () => {
    const secrets = new Set(Array.from({ length: 20 }, generateSecret));
    assert.equal(secrets.size, 20);
    for (const secret of secrets) {
      assert.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
      assert.equal(standardWebhooksKey(secret).length, 32);
      assert.equal(secretProblem(secret), undefined);
    }
  });

  test('a chosen secret must be whsec_ + standard base64 of 24 to 64 bytes', () => {
    for (const bytes of [24, 32, 48, 64]) assert.equal(secretProblem(secretOf(bytes)), undefined, `${bytes} bytes`);
    assert.match(secretProblem(secretOf(23))!, /24 to 64/);
    assert.match(secretProblem(secretOf(65))!, /24 to 64/);
    const malformed = [
      Buffer.alloc(32, 1).toString('base64'), // no prefix
      'WHSEC_' + Buffer.alloc(32, 1).toString('base64'),
      'whsec_',
      `whsec_${Buffer.alloc(32, 0xfb).toString('base64url')}`, // base64url alphabet
      `whsec_${Buffer.alloc(32, 1).toString('base64').replace(/=+$/, '')}`, // padding dropped
      `whsec_ ${Buffer.alloc(32, 1).toString('base64')}`,
      `whsec_${Buffer.alloc(32, 1).toString('base64')}\n`,
      'whsec_!!!!',
    ];
    for (const secret of malformed)
      assert.match(secretProblem(secret) ?? '(accepted)', /whsec_/, JSON.stringify(secret));
  });

  test('SecretBox seals with AES-256-GCM bound to the endpoint, and opens only with the same key and endpoint', () => {
    const box = new SecretBox(Buffer.alloc(32, 9));
    const secret = generateSecret();
    const sealed = box.seal('whep_a', secret);
    assert.match(sealed, /^aes256gcm:[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    assert.ok(!sealed.includes(secret.slice('whsec_'.length)));
    assert.notEqual(box.seal('whep_a', secret), sealed, 'a fresh nonce every time');
    assert.equal(box.open('whep_a', sealed), secret);
    assert.throws(
      () => box.open('whep_b', sealed),
      /does not open/,
      'copied into another endpoint row, it does not open',
    );
    assert.throws(() => new SecretBox(Buffer.alloc(32, 8)).open('whep_a', sealed), /does not open/, 'another key');
    const [prefix, iv, body, tag] = sealed.split(/[:.]/);
    const flipped = Buffer.from(body!, 'base64url');
    flipped[0]! ^= 1;
    assert.throws(
      () => box.open('whep_a', `${prefix}:${iv}.${flipped.toString('base64url')}.${tag}`),
      /does not open/,
      'tampered',
    );
  });

  describe('resolveSecretKey', () => {
    const dir = mkdtempSync(join(tmpdir(), 'signet-key-'));
    after(() => rmSync(dir, { recursive: true, force: true }));

    test('uses the configured key as it is', () => {
      const key = Buffer.alloc(32, 4);
      assert.equal(resolveSecretKey(key, 'postgres://db/x'), key);
      assert.equal(resolveSecretKey(key, `sqlite:${join(dir, 'unused.db')}`), key);
    });

    test('PostgreSQL without WEBHOOK_SECRET_KEY refuses to start', () => {
      assert.throws(
        () => resolveSecretKey(undefined, 'postgres://postgres@127.0.0.1/x'),
        (err: Error) => err instanceof SecretKeyError && /WEBHOOK_SECRET_KEY is required/.test(err.message),
      );
    });

    test('SQLite generates a 0600 key file beside the database once, and reads it back after', () => {
      const db = join(dir, 'signet.db');
      const key = resolveSecretKey(undefined, `sqlite:${db}`);
      assert.equal(key.length, 32);
      const file = `${db}.webhook-key`;
      assert.equal(statSync(file).mode & 0o777, 0o600);
      assert.equal(readFileSync(file, 'utf8').trim(), key.toString('base64url'));
      assert.deepEqual(resolveSecretKey(undefined, `sqlite:${db}`), key, 'the same key on the next start');
      assert.equal(resolveSecretKey(undefined, 'sqlite::memory:').length, 32);
    });

    test('a key file that does not hold 32 bytes is an error, not replaced', () => {
      const db = join(dir, 'broken.db');
      writeFileSync(`${db}.webhook-key`, 'too-short\n');
      assert.throws(() => resolveSecretKey(undefined, `sqlite:${db}`), SecretKeyError);
      assert.equal(readFileSync(`${db}.webhook-key`, 'utf8'), 'too-short\n');
    });
  });
});

describe('retry policy', () => {
  const settings = { scheduleMs: [0, 5000, 300_000], retryAfterCapMs: 3_600_000 };

  test('jitter is ±20 %', () => {
    assert.equal(
      jittered(10_000, () => 0),
      8000,
    );
    assert.equal(
      jittered(10_000, () => 0.5),
      10_000,
    );
    assert.equal(
      jittered(10_000, () => 1),
      12_000,
    );
    assert.equal(
      jittered(0, () => 1),
      0,
    );
    for (let i = 0; i < 200; i++) {
      const delay = jittered(5000);
      assert.ok(delay >= 4000 && delay <= 6000, String(delay));
    }
  });

  test('the next delay follows the schedule and ends after its last entry', () => {
    const fixed = { ...settings, random: () => 0.5 };
    assert.equal(firstDelay(fixed), 0);
    assert.equal(nextRetryDelay(fixed, 0, undefined), 5000);
    assert.equal(nextRetryDelay(fixed, 1, undefined), 300_000);
    assert.equal(nextRetryDelay(fixed, 2, undefined), undefined, 'the schedule is exhausted');
    assert.equal(nextRetryDelay(fixed, 7, undefined), undefined);
    assert.equal(firstDelay({ scheduleMs: [1000], retryAfterCapMs: 1, random: () => 1 }), 1200);
  });

  test('Retry-After lengthens the wait up to the cap, never shortens it', () => {
    const fixed = { ...settings, random: () => 0.5 };
    assert.equal(nextRetryDelay(fixed, 0, 60_000), 60_000, 'longer than the schedule: honoured');
    assert.equal(nextRetryDelay(fixed, 0, 1000), 5000, 'shorter than the schedule: the schedule wins');
    assert.equal(nextRetryDelay(fixed, 0, 10 * 3_600_000), 3_600_000, 'capped');
    assert.equal(nextRetryDelay(fixed, 2, 60_000), undefined, 'Retry-After does not extend an exhausted schedule');
  });

  test('parseRetryAfter reads delay-seconds and HTTP-dates', () => {
    const now = new Date('2026-01-01T00:00:00Z');
    assert.equal(parseRetryAfter('120', now), 120_000);
    assert.equal(parseRetryAfter(' 0 ', now), 0);
    assert.equal(parseRetryAfter(['30', '60'], now), 30_000);
    assert.equal(parseRetryAfter('Thu, 01 Jan 2026 00:01:30 GMT', now), 90_000);
    assert.equal(parseRetryAfter('Wed, 31 Dec 2025 23:00:00 GMT', now), 0, 'a date in the past means now');
    for (const bad of [undefined, 'soon', '', 'in a minute'])
      assert.equal(parseRetryAfter(bad, now), undefined, String(bad));
  });
});

describe('signing', () => {
  const event = {
    id: 'evt_0123456789abcdef0123456789abcdef',
    type: 'order.paid',
    occurredAt: new Date('2026-03-04T05:06:07.891Z'),
    dataJson: '{"Total":1.10,"b":1,"a":"é"}',
  };

  test('the body is the envelope with the attempt time in milliseconds and Data exactly as stored', () => {
    const body = deliveryBody(event, new Date('2026-03-04T05:07:08.999Z'));
    assert.equal(
      body,
      '{"Id":"evt_0123456789abcdef0123456789abcdef","Type":"order.paid","OccurredAtUtc":"2026-03-04T05:06:07.891Z","Timestamp":"2026-03-04T05:07:08.999Z","Data":{"Total":1.10,"b":1,"a":"é"}}',
    );
    assert.deepEqual(JSON.parse(body).Data, { Total: 1.1, b: 1, a: 'é' });
  });

  test('X-…-Signature-256 is what @octokit/webhooks-methods signs and verifies', async () => {
    const secret = generateSecret();
    const body = deliveryBody(event, new Date());
    assert.equal(githubSignature(secret, body), await githubSign(secret, body));
    assert.ok(await githubVerify(secret, body, githubSignature(secret, body)));
    assert.equal(await githubVerify(generateSecret(), body, githubSignature(secret, body)), false);
    assert.equal(
      await githubVerify(secret, `${body} `, githubSignature(secret, body)),
      false,
      'any change to the bytes breaks it',
    );
  });

  test('webhook-signature carries one v1 signature per active secret, each verified by standardwebhooks', () => {
    const [current, previous, unrelated] = [generateSecret(), generateSecret(), generateSecret()];
    const attemptAt = new Date();
    const body = deliveryBody(event, attemptAt);
    const headers = signatureHeaders({
      headerName: 'Acme-Shop',
      deliveryId: 'dlv_42',
      eventType: 'order.paid',
      body,
      attemptAt,
      secrets: [new SigningSecret(current), new SigningSecret(previous)],
    });
    assert.deepEqual(
      Object.keys(headers).sort(),
      [
        'X-Acme-Shop-Delivery',
        'X-Acme-Shop-Event',
        'X-Acme-Shop-Signature-256',
        'webhook-id',
        'webhook-signature',
        'webhook-timestamp',
      ].sort(),
    );
    assert.equal(headers['X-Acme-Shop-Delivery'], 'dlv_42');
    assert.equal(headers['X-Acme-Shop-Event'], 'order.paid');
    assert.equal(headers['webhook-id'], 'dlv_42');
    assert.equal(headers['webhook-timestamp'], String(Math.floor(attemptAt.getTime() / 1000)));
    assert.equal(
      headers['X-Acme-Shop-Signature-256'],
      githubSignature(current, body),
      'the GitHub-style header uses the newest secret',
    );
    const signatures = headers['webhook-signature']!.split(' ');
    assert.equal(signatures.length, 2);
    assert.equal(signatures[0], standardSignature(current, 'dlv_42', Number(headers['webhook-timestamp']), body));
    const standard = {
      'webhook-id': headers['webhook-id']!,
      'webhook-timestamp': headers['webhook-timestamp']!,
      'webhook-signature': headers['webhook-signature']!,
    };
    assert.equal(
      new Webhook(current).sign('dlv_42', new Date(Number(headers['webhook-timestamp']) * 1000), body),
      signatures[0],
      'the same bytes standardwebhooks would sign',
    );
    assert.deepEqual(new Webhook(current).verify(body, standard), JSON.parse(body));
    assert.deepEqual(new Webhook(previous).verify(body, standard), JSON.parse(body));
    assert.throws(() => new Webhook(unrelated).verify(body, standard));
    assert.throws(() => new Webhook(current).verify(body.replace('order.paid', 'order.cancelled'), standard));

    const single = signatureHeaders({
      headerName: 'Service',
      deliveryId: 'dlv_1',
      eventType: 'order.paid',
      body,
      attemptAt,
      secrets: [new SigningSecret(current)],
    });
    assert.equal(single['webhook-signature']!.split(' ').length, 1);
    assert.ok(single['X-Service-Signature-256']);
    assert.throws(() =>
      signatureHeaders({
        headerName: 'Service',
        deliveryId: 'dlv_1',
        eventType: 'order.paid',
        body,
        attemptAt,
        secrets: [],
      }),
    );
  });
});

describe('webhook settings', () => {
  test('defaults', () => {
    const config = loadConfig({});
    assert.equal(config.webhookHeaderName, 'Service');
    assert.equal(config.webhookTimeoutMs, 15_000);
    assert.deepEqual(
      config.webhookRetryScheduleMs,
      [0, 5000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000],
    );
    assert.equal(config.webhookRetryAfterCapMs, 3_600_000);
    assert.equal(config.webhookDisableAfterMs, 5 * 86_400_000);
    assert.equal(config.webhookSecretOverlapMs, 86_400_000);
    assert.equal(config.webhookSecretKey, undefined);
    assert.equal(config.webhookAllowHttp, false);
    assert.deepEqual(config.webhookAllowedNetworks, []);
    assert.equal(config.webhookDispatcher, true);
    assert.equal(config.webhookConcurrency, 64);
    assert.equal(config.webhookEndpointConcurrency, 16);
    assert.equal(config.webhookPollIntervalMs, 1000);
    assert.equal(config.eventRetentionMs, 30 * 86_400_000);
  });

  test('parses each WEBHOOK_* setting', () => {
    const key = Buffer.alloc(32, 3);
    const config = loadConfig({
      WEBHOOK_HEADER_NAME: 'Acme-Shop',
      WEBHOOK_TIMEOUT: '5s',
      WEBHOOK_RETRY_SCHEDULE: '0s, 200ms,1m,2h',
      WEBHOOK_RETRY_AFTER_MAX: '10m',
      WEBHOOK_DISABLE_AFTER: '1d',
      WEBHOOK_SECRET_OVERLAP: '0s',
      WEBHOOK_SECRET_KEY: key.toString('base64url'),
      WEBHOOK_ALLOW_HTTP: 'true',
      WEBHOOK_ALLOWED_NETWORKS: 'Loopback, 10.0.0.0/8,fd00::/8 ,192.168.1.5',
      WEBHOOK_DISPATCHER: 'false',
      WEBHOOK_CONCURRENCY: '8',
      WEBHOOK_ENDPOINT_CONCURRENCY: '2',
      WEBHOOK_POLL_INTERVAL: '100ms',
      EVENT_RETENTION: '7d',
    });
    assert.equal(config.webhookHeaderName, 'Acme-Shop');
    assert.equal(config.webhookTimeoutMs, 5000);
    assert.deepEqual(config.webhookRetryScheduleMs, [0, 200, 60_000, 7_200_000]);
    assert.equal(config.webhookRetryAfterCapMs, 600_000);
    assert.equal(config.webhookDisableAfterMs, 86_400_000);
    assert.equal(config.webhookSecretOverlapMs, 0);
    assert.deepEqual(config.webhookSecretKey, key);
    assert.equal(config.webhookAllowHttp, true);
    assert.deepEqual(config.webhookAllowedNetworks, ['loopback', '10.0.0.0/8', 'fd00::/8', '192.168.1.5']);
    assert.equal(config.webhookDispatcher, false);
    assert.equal(config.webhookConcurrency, 8);
    assert.equal(config.webhookEndpointConcurrency, 2);
    assert.equal(config.webhookPollIntervalMs, 100);
    assert.equal(config.eventRetentionMs, 7 * 86_400_000);
    assert.doesNotThrow(() => new AddressPolicy(config.webhookAllowedNetworks), 'the parsed list builds a policy');
  });

  test('refuses bad WEBHOOK_* values with a message naming the variable', () => {
    const cases: [string, string][] = [
      ['WEBHOOK_HEADER_NAME', 'X Service'],
      ['WEBHOOK_HEADER_NAME', '-Service'],
      ['WEBHOOK_TIMEOUT', '1s'],
      ['WEBHOOK_TIMEOUT', '31s'],
      ['WEBHOOK_TIMEOUT', 'soon'],
      ['WEBHOOK_RETRY_SCHEDULE', '0s,later'],
      ['WEBHOOK_RETRY_SCHEDULE', ','],
      ['WEBHOOK_RETRY_SCHEDULE', Array.from({ length: 21 }, () => '1s').join(',')],
      ['WEBHOOK_RETRY_SCHEDULE', '0s,8d'],
      ['WEBHOOK_RETRY_AFTER_MAX', '500ms'],
      ['WEBHOOK_DISABLE_AFTER', '30s'],
      ['WEBHOOK_SECRET_OVERLAP', '31d'],
      ['WEBHOOK_SECRET_KEY', 'too-short'],
      ['WEBHOOK_ALLOW_HTTP', 'maybe'],
      ['WEBHOOK_ALLOWED_NETWORKS', 'intranet'],
      ['WEBHOOK_ALLOWED_NETWORKS', 'loopback,example.com'],
      ['WEBHOOK_ALLOWED_NETWORKS', '10.0.0.0/abc'],
      ['WEBHOOK_DISPATCHER', 'sometimes'],
      ['WEBHOOK_CONCURRENCY', '0'],
      ['WEBHOOK_ENDPOINT_CONCURRENCY', '1001'],
      ['WEBHOOK_POLL_INTERVAL', '10ms'],
      ['EVENT_RETENTION', '30m'],
    ];
    for (const [name, value] of cases) {
      assert.throws(
        () => loadConfig({ [name]: value }),
        (err: Error) => err.name === 'ConfigError' && err.message.startsWith(`${name}:`),
        `${name}=${value}`,
      );
    }
  });

  test('EVENT_RETENTION shorter than the retry window refuses to start', () => {
    // The default schedule adds up to about 28 h: a day of retention would purge events still being retried.
    assert.throws(
      () => loadConfig({ EVENT_RETENTION: '24h' }),
      (err: Error) => err.name === 'ConfigError' && /^EVENT_RETENTION: .*retry window/.test(err.message),
    );
    assert.throws(
      () => loadConfig({ EVENT_RETENTION: '2h', WEBHOOK_RETRY_SCHEDULE: '0s,1h,1h,1s' }),
      /EVENT_RETENTION/,
    );
    assert.equal(
      loadConfig({ EVENT_RETENTION: '2h', WEBHOOK_RETRY_SCHEDULE: '0s,1h,1h' }).eventRetentionMs,
      7_200_000,
      'exactly the window is enough',
    );
    assert.equal(loadConfig({ EVENT_RETENTION: '29h' }).eventRetentionMs, 29 * 3_600_000);
  });
});
