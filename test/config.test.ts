import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { loadConfig } from '../src/config/config.ts';

describe('configuration', () => {
  test('has safe defaults for a first start on one laptop', () => {
    const config = loadConfig({});
    assert.equal(config.host, '127.0.0.1');
    assert.equal(config.port, 3000);
    assert.equal(config.databaseUrl, 'sqlite:./data/signet.db');
    assert.equal(config.trustProxy, false);
    assert.equal(config.authIssuer, 'http://127.0.0.1:3000/oauth');
    assert.equal(config.apiResource, 'http://127.0.0.1:3000/api');
    assert.deepEqual(config.corsOrigins, []);
    assert.ok(Object.isFrozen(config));
  });

  test('derives issuer and resource from PUBLIC_URL', () => {
    const config = loadConfig({ PUBLIC_URL: 'https://api.example.com/' });
    assert.equal(config.publicUrl, 'https://api.example.com');
    assert.equal(config.authIssuer, 'https://api.example.com/oauth');
    assert.equal(config.apiResource, 'https://api.example.com/api');
  });

  test('refuses a PUBLIC_URL with a path, since /api and /oauth are served at the root', () => {
    for (const value of [
      'https://gw.example.com/signet',
      'https://gw.example.com/signet/',
      'http://127.0.0.1:3000/a/b',
    ]) {
      assert.throws(
        () => loadConfig({ PUBLIC_URL: value }),
        (err: Error) =>
          err.name === 'ConfigError' &&
          /^PUBLIC_URL: expected scheme:\/\/host\[:port\] without a path/.test(err.message),
        value,
      );
    }
    assert.equal(loadConfig({ PUBLIC_URL: 'https://gw.example.com:8443/' }).publicUrl, 'https://gw.example.com:8443');
  });

  test('parses TRUST_PROXY as off, a hop count or an address list', () => {
    assert.equal(loadConfig({ TRUST_PROXY: 'false' }).trustProxy, false);
    assert.equal(loadConfig({ TRUST_PROXY: '2' }).trustProxy, 2);
    assert.deepEqual(loadConfig({ TRUST_PROXY: '127.0.0.1, 10.0.0.0/8,loopback' }).trustProxy, [
      '127.0.0.1',
      '10.0.0.0/8',
      'loopback',
    ]);
  });

  test('refuses a bad value with a message naming the variable', () => {
    const cases: Record<string, string> = {
      PORT: 'eighty',
      DATABASE_URL: 'mysql://x',
      PUBLIC_URL: 'ftp://x',
      TRUST_PROXY: 'everyone',
      LOG_LEVEL: 'loud',
      AUTH_ALGORITHMS: 'HS256',
      CORS_ORIGINS: 'https://app.example.com/path',
      REDIS_URL: 'localhost:6379',
      RATE_LIMIT_MAX: '0',
      SQLITE_SYNCHRONOUS: 'OFF',
    };
    for (const [name, value] of Object.entries(cases)) {
      assert.throws(
        () => loadConfig({ [name]: value }),
        (err: Error) => err.name === 'ConfigError' && err.message.startsWith(`${name}:`),
        name,
      );
    }
  });

  test('never accepts an HMAC or none algorithm for access tokens', () => {
    for (const alg of ['HS256', 'HS512', 'none'])
      assert.throws(() => loadConfig({ AUTH_ALGORITHMS: `RS256,${alg}` }), /AUTH_ALGORITHMS/);
  });

  test('serves the metrics on a listener of their own, on loopback port 9464, by default', () => {
    const config = loadConfig({});
    assert.equal(config.metricsListener, 9464);
    assert.equal(config.metricsHost, '127.0.0.1');
    assert.equal(config.metricsToken, undefined);
    assert.equal(config.metricsAllow, undefined);
    assert.equal(loadConfig({ METRICS_PORT: '0' }).metricsListener, 0);
    assert.equal(loadConfig({ METRICS_PORT: 'off' }).metricsListener, 'off');
  });

  test('refuses METRICS_PORT=main without METRICS_TOKEN or METRICS_ALLOW, naming the three', () => {
    assert.throws(
      () => loadConfig({ METRICS_PORT: 'main' }),
      (err: Error) =>
        err.name === 'ConfigError' &&
        ['METRICS_PORT', 'METRICS_TOKEN', 'METRICS_ALLOW'].every((v) => err.message.includes(v)),
    );
    assert.equal(loadConfig({ METRICS_PORT: 'main', METRICS_TOKEN: 'a'.repeat(32) }).metricsListener, 'main');
    assert.deepEqual(loadConfig({ METRICS_PORT: 'main', METRICS_ALLOW: '10.0.0.0/8, ::1' }).metricsAllow, [
      '10.0.0.0/8',
      '::1',
    ]);
  });

  test('refuses a METRICS_ALLOW entry that is no address or CIDR range, naming it', () => {
    for (const entry of ['10.0.0.0/33', 'example.com', '::1/129', '10.0.0.1/8/8', 'loopback']) {
      assert.throws(
        () => loadConfig({ METRICS_ALLOW: `127.0.0.1, ${entry}` }),
        (err: Error) =>
          err.name === 'ConfigError' && err.message.startsWith('METRICS_ALLOW:') && err.message.includes(`"${entry}"`),
        entry,
      );
    }
  });

  test('a bad KEY_ENCRYPTION_KEY or WEBHOOK_SECRET_KEY is refused without repeating it', () => {
    const almost = Buffer.alloc(31, 5).toString('base64url');
    for (const name of ['KEY_ENCRYPTION_KEY', 'WEBHOOK_SECRET_KEY'])
      assert.throws(
        () => loadConfig({ [name]: almost }),
        (err: Error) =>
          err.name === 'ConfigError' && err.message.startsWith(`${name}:`) && !err.message.includes(almost),
        name,
      );
  });

  test('refuses a short METRICS_TOKEN without repeating it, and bad metrics ports and hosts', () => {
    const short = 'too-short-secret';
    assert.throws(
      () => loadConfig({ METRICS_TOKEN: short }),
      (err: Error) =>
        err.name === 'ConfigError' && err.message.startsWith('METRICS_TOKEN:') && !err.message.includes(short),
    );
    assert.throws(() => loadConfig({ METRICS_TOKEN: `${'a'.repeat(32)} b` }), /^ConfigError: METRICS_TOKEN:/);
    for (const port of ['65536', '-1', 'public', '9464x'])
      assert.throws(() => loadConfig({ METRICS_PORT: port }), /^ConfigError: METRICS_PORT:/, port);
    assert.throws(() => loadConfig({ METRICS_HOST: 'not a host' }), /^ConfigError: METRICS_HOST:/);
  });
});
