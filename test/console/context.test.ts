// The console's cookie settings (src/console/context.ts cookieSettings): on an https origin every cookie
// is Secure with the `__Host-` prefix (RFC 6265bis §4.1.3.2: Secure, Path=/, no Domain, so no other host
// can set or shadow it); on a plain-http loopback origin (development) no Secure and no prefix, or the
// browser would drop the cookies. Both are HttpOnly and SameSite=Strict with Path=/.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fastifyCookie from '@fastify/cookie';
import Fastify from 'fastify';
import { cookieSettings } from '../../src/console/context.ts';

/** The Set-Cookie header a Fastify app with @fastify/cookie sends for `name` with these settings. */
async function setCookie(settings: ReturnType<typeof cookieSettings>, name: string): Promise<string> {
  const app = Fastify();
  await app.register(fastifyCookie);
  app.get('/', (_request, reply) => reply.setCookie(name, 'value', settings.options).send('ok'));
  try {
    const response = await app.inject({ method: 'GET', url: '/' });
    return String(response.headers['set-cookie']);
  } finally {
    await app.close();
  }
}

test('https origin: Secure, __Host- prefix, SameSite=Strict, HttpOnly, Path=/', async () => {
  const settings = cookieSettings('https://signet.example');
  assert.deepEqual(
    [settings.session, settings.login, settings.portal],
    ['__Host-signet-console', '__Host-signet-console-login', '__Host-signet-console-portal'],
  );
  assert.deepEqual(settings.options, { httpOnly: true, secure: true, sameSite: 'strict', path: '/' });
  const header = await setCookie(settings, settings.session);
  for (const attribute of ['Secure', 'HttpOnly', 'SameSite=Strict', 'Path=/'])
    assert.ok(header.split('; ').includes(attribute), `${attribute} in ${header}`);
  assert.doesNotMatch(header, /Domain=/i, `a __Host- cookie has no Domain: ${header}`);
});

test('http://localhost:3000: no Secure and no prefix, still HttpOnly, SameSite=Strict, Path=/', async () => {
  const settings = cookieSettings('http://localhost:3000');
  assert.deepEqual(
    [settings.session, settings.login, settings.portal],
    ['signet-console', 'signet-console-login', 'signet-console-portal'],
  );
  assert.deepEqual(settings.options, { httpOnly: true, secure: false, sameSite: 'strict', path: '/' });
  const header = await setCookie(settings, settings.session);
  assert.ok(!header.split('; ').includes('Secure'), header);
  for (const attribute of ['HttpOnly', 'SameSite=Strict', 'Path=/'])
    assert.ok(header.split('; ').includes(attribute), `${attribute} in ${header}`);
});
