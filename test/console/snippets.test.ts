// The portal's copy-paste snippets (docs/guides/portal.md) run as their users would run them: a real delivery
// signed by Signet's dispatcher, caught by a local receiver, is piped into each snippet as a child
// process. Each must say "verified" for it, and refuse it with a reason when the body was changed, the
// secret is wrong, or the (validly signed) timestamp is old. After a rotation, a consumer still on the
// previous secret verifies too: webhook-signature carries one signature per active secret.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { SNIPPETS } from '../../src/console/snippets/index.ts';
import { generateSecret } from '../../src/webhooks/store/secrets.ts';
import { githubSignature, standardSignature } from '../../src/webhooks/delivery/signing.ts';
import { testDialects } from '../helpers/databases.ts';
import { exitOf } from '../helpers/deadline.ts';
import { call } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import {
  LOCAL_WEBHOOKS_ENV,
  registerEndpoint,
  startReceiver,
  WEBHOOK_SCOPES,
  type TestReceiver,
} from '../helpers/webhook-receiver.ts';

const SNIPPET_DIR = fileURLToPath(new URL('../../src/console/snippets/', import.meta.url));
const RUN_TIMEOUT_MS = 30_000;

/** What a snippet is given: the endpoint's secret, the delivery's headers and its raw body. */
interface Delivery {
  secret: string;
  headers: IncomingHttpHeaders;
  body: string;
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

const COMMANDS: Record<string, string[]> = {
  'node-receiver': [process.execPath, `${SNIPPET_DIR}node-receiver.mjs`],
  'node-crypto': [process.execPath, `${SNIPPET_DIR}node-crypto.mjs`],
  shell: ['bash', `${SNIPPET_DIR}verify.sh`],
};

const headerOf = (headers: IncomingHttpHeaders, name: string): string => {
  const value = headers[name];
  assert.equal(typeof value, 'string', `header ${name} in ${JSON.stringify(headers)}`);
  return value as string;
};

/** Runs one snippet as documented in its header: the headers and secret in the environment, the body on stdin. */
async function runSnippet(id: string, delivery: Delivery): Promise<Run> {
  const [command, ...args] = COMMANDS[id]!;
  const { headers } = delivery;
  const child = spawn(command!, args, {
    env: {
      PATH: process.env.PATH,
      WEBHOOK_SECRET: delivery.secret,
      WEBHOOK_SIGNATURE_256: headerOf(headers, 'x-service-signature-256'),
      WEBHOOK_ID: headerOf(headers, 'webhook-id'),
      WEBHOOK_TIMESTAMP: headerOf(headers, 'webhook-timestamp'),
      WEBHOOK_SIGNATURE: headerOf(headers, 'webhook-signature'),
    },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const run: Run = { code: null, stdout: '', stderr: '' };
  child.stdout.on('data', (chunk: Buffer) => (run.stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (run.stderr += chunk.toString()));
  // A snippet may refuse from its headers alone (a stale timestamp) and exit before it reads the body:
  // the write then fails with EPIPE, which is that snippet's answer, not a failure of this test.
  let stdinError: NodeJS.ErrnoException | undefined;
  child.stdin.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') stdinError = error;
  });
  child.stdin.end(delivery.body);
  try {
    run.code = await exitOf(child, RUN_TIMEOUT_MS, () => `stdout: ${run.stdout}\nstderr: ${run.stderr}`);
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
  if (stdinError) throw stdinError;
  return run;
}

function expectVerified(id: string, run: Run): void {
  assert.equal(run.code, 0, `${id} should verify; ${JSON.stringify(run)}`);
  assert.equal(run.stdout.trim(), 'verified', `${id}; ${JSON.stringify(run)}`);
}

function expectRefused(id: string, run: Run, reason: RegExp): void {
  assert.notEqual(run.code, 0, `${id} should refuse; ${JSON.stringify(run)}`);
  assert.doesNotMatch(run.stdout, /verified/, `${id}; ${JSON.stringify(run)}`);
  assert.match(run.stderr, reason, `${id}; ${JSON.stringify(run)}`);
}

/**
 * The same delivery signed afresh, with the producer's own signing functions, as if it had been sent
 * `ageSeconds` ago: the signatures are valid, so only the timestamp check can refuse it.
 */
function resignedInThePast(delivery: Delivery, ageSeconds: number): Delivery {
  const seconds = Math.floor(Date.now() / 1000) - ageSeconds;
  const body = delivery.body.replace(
    /"Timestamp":"[^"]+"/,
    `"Timestamp":${JSON.stringify(new Date(seconds * 1000).toISOString())}`,
  );
  assert.notEqual(body, delivery.body);
  const id = headerOf(delivery.headers, 'webhook-id');
  return {
    secret: delivery.secret,
    body,
    headers: {
      ...delivery.headers,
      'x-service-signature-256': githubSignature(delivery.secret, body),
      'webhook-timestamp': String(seconds),
      'webhook-signature': standardSignature(delivery.secret, id, seconds, body),
    },
  };
}

test('the exported snippets are the files the tests run, verbatim', () => {
  assert.deepEqual(
    SNIPPETS.map((s) => s.id),
    ['node-receiver', 'node-crypto', 'shell'],
  );
  for (const snippet of SNIPPETS)
    assert.equal(snippet.source, readFileSync(`${SNIPPET_DIR}${snippet.fileName}`, 'utf8'), snippet.fileName);
  assert.match(SNIPPETS[0]!.source, /from 'signet\/receiver'/);
  assert.match(SNIPPETS[1]!.source, /timingSafeEqual/);
  assert.doesNotMatch(SNIPPETS[1]!.source, /from '(?!node:)/, 'node:crypto only');
  assert.match(SNIPPETS[2]!.source, /openssl/);
});

for (const dialect of testDialects()) {
  describe(`verification snippets on a real delivery [${dialect}]`, () => {
    let server: TestServer;
    let receiver: TestReceiver;
    let token: string;
    let endpointId: string;
    let delivery: Delivery;

    /** Pings the endpoint and returns what the receiver got, with `secret` for the snippets. */
    const deliverPing = async (secret: string): Promise<Delivery> => {
      const seen = receiver.received.length;
      const ping = await call(server.url, 'POST', `/api/webhooks/${endpointId}/ping`, { token });
      assert.equal(ping.status, 202, ping.text);
      const received = await receiver.waitFor(seen + 1);
      const { headers, body } = received[seen]!;
      assert.equal(headerOf(headers, 'webhook-id'), ping.json.Id);
      return { secret, headers, body };
    };

    before(async () => {
      server = await startServer(dialect, LOCAL_WEBHOOKS_ENV);
      receiver = await startReceiver();
      token = await server.issuer.clientToken(WEBHOOK_SCOPES);
      const created = await registerEndpoint(server, token, receiver.url, ['webhook.ping']);
      endpointId = created.json.Id;
      delivery = await deliverPing(created.json.Secret);
    });
    after(async () => {
      await receiver?.close();
      await server?.close();
    });

    for (const id of Object.keys(COMMANDS)) {
      describe(id, () => {
        test('prints "verified" for the delivery as Signet sent it', async () => {
          expectVerified(id, await runSnippet(id, delivery));
        });

        test('refuses a body with one byte changed', async () => {
          const body = delivery.body.replace('"webhook.ping"', '"webhook.pong"');
          assert.notEqual(body, delivery.body);
          expectRefused(id, await runSnippet(id, { ...delivery, body }), /signature/);
        });

        test('refuses the delivery under a wrong secret', async () => {
          expectRefused(id, await runSnippet(id, { ...delivery, secret: generateSecret() }), /signature/);
        });

        test('refuses a validly signed delivery whose timestamp is 10 minutes old', async () => {
          expectRefused(id, await runSnippet(id, resignedInThePast(delivery, 600)), /timestamp/);
        });
      });
    }

    test('after a secret rotation, every snippet verifies with the new secret, and a consumer on the previous one still verifies', async () => {
      const previous = delivery.secret;
      const rotated = await call(server.url, 'POST', `/api/webhooks/${endpointId}/rotate-secret`, { token });
      assert.equal(rotated.status, 200, rotated.text);
      const fresh = await deliverPing(rotated.json.Secret);
      assert.equal(headerOf(fresh.headers, 'webhook-signature').split(' ').length, 2, 'one signature per secret');
      for (const id of Object.keys(COMMANDS)) expectVerified(id, await runSnippet(id, fresh));
      // X-Service-Signature-256 carries the newest secret only: the kit's consumer lists both
      // (docs/guides/producing-webhooks.md, "Rotating a secret"); the Standard Webhooks consumers match the previous
      // secret's signature.
      expectVerified(
        'node-receiver',
        await runSnippet('node-receiver', { ...fresh, secret: `${fresh.secret},${previous}` }),
      );
      for (const id of ['node-crypto', 'shell'])
        expectVerified(id, await runSnippet(id, { ...fresh, secret: previous }));
    });
  });
}
