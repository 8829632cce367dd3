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
});
