// Idempotency-Key on POST /api/orders and POST /api/orders/{id}/pay: replay, fingerprinting, key
// scoping and syntax, concurrency, expiry and takeover of abandoned claims. Real HTTP, both dialects.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { purgeExpiredKeys, requestFingerprint } from '../../src/idempotency/idempotency.ts';
import { toDbTime } from '../../src/db/codecs.ts';
import { testDialects } from '../helpers/databases.ts';
import { waitUntil } from '../helpers/deadline.ts';
import { call, type CallResult } from '../helpers/http.ts';
import { startWithClientToken, type TestServer } from '../helpers/server.ts';
import { expectProblem, expectStatus } from '../helpers/expect.ts';
import { RawConnection } from '../http/raw-http.ts';

/**
 * Writes the request bytes exactly as given: fetch and node:http would merge repeated fields into
 * one line or refuse control characters before they ever reach the server. The answer is what came
 * before the server closed (`connection: close`); a server that keeps the connection open past
 * RawConnection's deadline fails the wait with what it sent so far.
 */
async function rawPost(
  baseUrl: string,
  path: string,
  headers: [string, string][],
  body: string,
): Promise<{ status: number; text: string }> {
  const url = new URL(baseUrl);
  const head = [
    `POST ${path} HTTP/1.1`,
    `host: ${url.host}`,
    'connection: close',
    'content-type: application/json',
    `content-length: ${Buffer.byteLength(body)}`,
  ];
  for (const [name, value] of headers) head.push(`${name}: ${value}`);
  const connection = await RawConnection.open(Number(url.port));
  try {
    connection.write(`${head.join('\r\n')}\r\n\r\n${body}`);
    await connection.closed();
  } finally {
    connection.destroy();
  }
  // RawConnection reads latin1 (one char a byte): decode the bytes as the UTF-8 they are.
  const raw = Buffer.from(connection.received, 'latin1').toString('utf8');
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(raw)?.[1] ?? 0);
  const text = raw.slice(raw.indexOf('\r\n\r\n') + 4);
  return { status, text };
}

/** The body parsed as JSON; a body that is not JSON fails showing it as received. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
function jsonOf(res: { status: number; text: string }): any {
  try {
    return JSON.parse(res.text);
  } catch {
    throw new Error(`expected a JSON body, got ${res.status}: ${JSON.stringify(res.text)}`);
  }
}

function problemType(res: CallResult): string {
  return (
    String(res.json?.type ?? '')
      .split('/')
      .at(-1) ?? ''
  );
}

/** A 409 for a key in flight whose Retry-After is the lock's remaining time, measured around the request. */
function assertRetryAfterIsRemainingLock(
  res: CallResult,
  lockedUntil: number,
  sentAt: number,
  receivedAt: number,
): void {
  expectProblem(res, 409, 'idempotency-key-in-flight');
  const retryAfter = Number(res.headers.get('retry-after'));
  const atMost = Math.max(1, Math.ceil((lockedUntil - sentAt) / 1000));
  const atLeast = Math.max(1, Math.ceil((lockedUntil - receivedAt) / 1000));
  assert.ok(
    Number.isInteger(retryAfter) && retryAfter >= atLeast && retryAfter <= atMost,
    `Retry-After ${res.headers.get('retry-after')}, expected ${atLeast}..${atMost} (the lock ends ${lockedUntil - receivedAt} ms after the answer); body: ${res.text}`,
  );
}

for (const dialect of testDialects()) {
  describe(`Idempotency-Key [${dialect}]`, () => {
    let server: TestServer;
    let token: string;
    before(
      async () => ({ server, token } = await startWithClientToken(dialect, { IDEMPOTENCY_KEY_TTL_SECONDS: '60' })),
    );
    after(() => server.close());

    /** A claim left by another request (or a crashed process) whose lock ends `lockMs` from now. */
    async function insertInFlightClaim(key: string, body: unknown, lockMs: number): Promise<void> {
      const now = Date.now();
      await server.app.database.db
        .insertInto('idempotency_keys')
        .values({
          caller: 'client:test-client',
          key,
          fingerprint: requestFingerprint('POST', '/api/orders', body),
          state: 'in_flight',
          locked_until: toDbTime(new Date(now + lockMs)),
          created_at: toDbTime(new Date(now - 10_000)),
          expires_at: toDbTime(new Date(now + 60_000)),
          response_status: null,
          response_headers: null,
          response_body: null,
        })
        .execute();
    }

    const create = (body: unknown, key?: string, tok = token) =>
      call(server.url, 'POST', '/api/orders', {
        token: tok,
        body,
        headers: key === undefined ? {} : { 'idempotency-key': key },
      });
    const createRaw = (rawBody: string, key: string) =>
      call(server.url, 'POST', '/api/orders', { token, rawBody, headers: { 'idempotency-key': key } });
    const pay = (id: number, key: string) =>
      call(server.url, 'POST', `/api/orders/${id}/pay`, { token, headers: { 'idempotency-key': key } });
    const ordersOf = async (customerId: string): Promise<number[]> => {
      const res = await call(server.url, 'GET', `/api/orders?limit=100&CustomerId=${customerId}`, { token });
      expectStatus(res, 200);
      return res.json.Items.map((o: { Id: number }) => o.Id);
    };
    const newKey = () => `key-${randomUUID()}`;

    test('a repeated create with the same key and payload replays the original 201 byte-for-byte and creates no second order', async () => {
      const customer = randomUUID();
      const key = newKey();
      const body = { CustomerId: customer, Total: 25.5, Currency: 'EUR' };
      const first = await create(body, key);
      expectStatus(first, 201);
      assert.equal(first.headers.get('idempotent-replayed'), null, 'the original response is not marked as a replay');
      const second = await create(body, key);
      expectStatus(second, 201);
      assert.equal(second.text, first.text, 'replayed body is byte-for-byte the original');
      assert.equal(second.headers.get('idempotent-replayed'), 'true');
      assert.equal(second.headers.get('location'), first.headers.get('location'));
      assert.equal(second.headers.get('etag'), first.headers.get('etag'));
      assert.deepEqual(await ordersOf(customer), [first.json.Id]);
    });

    test('a repeated pay with the same key replays the original 200 and does not attempt a second transition', async () => {
      const customer = randomUUID();
      const created = await create({ CustomerId: customer, Total: 3 });
      const key = newKey();
      const first = await pay(created.json.Id, key);
      expectStatus(first, 200);
      assert.equal(first.json.Status, 'paid');
      const second = await pay(created.json.Id, key);
      assert.equal(second.status, 200, 'a replay, not the 409 a second pay of a paid order would get');
      assert.equal(second.text, first.text);
      assert.equal(second.headers.get('idempotent-replayed'), 'true');
      const withoutKey = await call(server.url, 'POST', `/api/orders/${created.json.Id}/pay`, { token });
      assert.equal(withoutKey.status, 409, 'the order really is paid: a fresh pay is refused');
      const history = await call(server.url, 'GET', `/api/orders/${created.json.Id}?include=history`, { token });
      assert.deepEqual(
        history.json._embedded.history.map((h: { Status: string }) => h.Status),
        ['pending', 'paid'],
      );
      assert.deepEqual(await ordersOf(customer), [created.json.Id]);
    });

    test('member order and whitespace do not change the fingerprint', async () => {
      const customer = randomUUID();
      const key = newKey();
      const first = await createRaw(`{"CustomerId":"${customer}","Total":7.25,"Currency":"GBP"}`, key);
      expectStatus(first, 201);
      const reordered = await createRaw(`{ "Currency" : "GBP",\n\t"Total": 7.25 ,  "CustomerId": "${customer}" }`, key);
      expectStatus(reordered, 201);
      assert.equal(reordered.headers.get('idempotent-replayed'), 'true');
      assert.equal(reordered.text, first.text);
      assert.deepEqual(await ordersOf(customer), [first.json.Id]);
    });

    test('the same key with a different payload is a 409 problem and changes nothing', async () => {
      const customer = randomUUID();
      const key = newKey();
      const first = await create({ CustomerId: customer, Total: 10 }, key);
      expectStatus(first, 201);
      const different = await create({ CustomerId: customer, Total: 11 }, key);
      expectStatus(different, 409);
      assert.equal(different.headers.get('content-type'), 'application/problem+json; charset=utf-8');
      assert.equal(problemType(different), 'idempotency-key-reused');
      assert.equal(different.headers.get('idempotent-replayed'), null);
      assert.deepEqual(await ordersOf(customer), [first.json.Id]);
      const original = await create({ CustomerId: customer, Total: 10 }, key);
      assert.equal(original.status, 201, 'the key still replays its own request');
      assert.equal(original.text, first.text);
    });

    test('the same key on a different path is a 409 problem', async () => {
      const customer = randomUUID();
      const key = newKey();
      const created = await create({ CustomerId: customer, Total: 10 }, key);
      expectStatus(created, 201);
      const payWithSameKey = await pay(created.json.Id, key);
      expectStatus(payWithSameKey, 409);
      assert.equal(problemType(payWithSameKey), 'idempotency-key-reused');
      assert.equal(
        (await call(server.url, 'GET', `/api/orders/${created.json.Id}`, { token })).json.Status,
        'pending',
        'the pay did not run',
      );
      const other = await create({ CustomerId: customer, Total: 4 });
      const payKey = newKey();
      expectStatus(await pay(other.json.Id, payKey), 200);
      const payOtherOrder = await pay(created.json.Id, payKey);
      assert.equal(payOtherOrder.status, 409, 'a pay key reused for another order is a different request');
      assert.equal(problemType(payOtherOrder), 'idempotency-key-reused');
    });

    test('keys are scoped to the caller: two clients can use the same key independently', async () => {
      const customer = randomUUID();
      const key = newKey();
      const tokenA = await server.issuer.clientToken('orders:read orders:write', 'client-a');
      const tokenB = await server.issuer.clientToken('orders:read orders:write', 'client-b');
      const a = await create({ CustomerId: customer, Total: 1 }, key, tokenA);
      const b = await create({ CustomerId: customer, Total: 2 }, key, tokenB);
      expectStatus(a, 201);
      assert.equal(b.status, 201, 'a different payload under the same key is fine for another caller');
      assert.equal(b.headers.get('idempotent-replayed'), null);
      assert.notEqual(a.json.Id, b.json.Id);
      const aAgain = await create({ CustomerId: customer, Total: 1 }, key, tokenA);
      assert.equal(aAgain.headers.get('idempotent-replayed'), 'true');
      assert.equal(aAgain.json.Id, a.json.Id);
      assert.deepEqual(
        (await ordersOf(customer)).sort((x, y) => x - y),
        [a.json.Id, b.json.Id].sort((x, y) => x - y),
      );
    });

    test('invalid keys are 400 problems and create nothing: empty, 256 characters, control characters, sent twice', async () => {
      const customer = randomUUID();
      const body = JSON.stringify({ CustomerId: customer, Total: 1 });
      const authorization = `Bearer ${token}`;
      const cases: [string, [string, string][]][] = [
        ['empty', [['idempotency-key', '']]],
        ['256 characters', [['idempotency-key', 'k'.repeat(256)]]],
        ['a tab inside', [['idempotency-key', 'ab\tcd']]],
        ['a space inside', [['idempotency-key', 'ab cd']]],
        ['non-ASCII', [['idempotency-key', 'ab\u00e9cd']]],
        [
          'two header lines',
          [
            ['idempotency-key', 'same'],
            ['idempotency-key', 'same'],
          ],
        ],
        [
          'two header lines, quoted',
          [
            ['idempotency-key', '"same"'],
            ['idempotency-key', '"same"'],
          ],
        ],
        ['quoted with a tab inside', [['idempotency-key', '"ab\tcd"']]],
        ['quoted and empty', [['idempotency-key', '""']]],
        ['unterminated quote', [['idempotency-key', '"abc']]],
      ];
      for (const [name, headers] of cases) {
        const res = await rawPost(server.url, '/api/orders', [['authorization', authorization], ...headers], body);
        assert.equal(res.status, 400, `${name}: ${res.text}`);
        assert.equal(jsonOf(res).errors?.[0]?.pointer, '/headers/idempotency-key', `${name}: ${res.text}`);
      }
      // Other control characters are not legal in a field value at all (RFC 9110 §5.5): Node's HTTP
      // parser refuses the request with 400 before the application sees it.
      for (const control of ['\x01', '\x1f', '\x7f']) {
        const res = await rawPost(
          server.url,
          '/api/orders',
          [
            ['authorization', authorization],
            ['idempotency-key', `ab${control}cd`],
          ],
          body,
        );
        assert.equal(res.status, 400, `control character ${JSON.stringify(control)}`);
      }
      const longest = await rawPost(
        server.url,
        '/api/orders',
        [
          ['authorization', authorization],
          ['idempotency-key', randomUUID().padEnd(255, 'k')],
        ],
        body,
      );
      assert.equal(longest.status, 201, '255 characters is the maximum and is accepted');
      assert.equal((await ordersOf(customer)).length, 1);
    });

    test('a quoted structured-field string is accepted and is the same key as its bare content', async () => {
      const customer = randomUUID();
      const bare = newKey();
      const quoted = await create({ CustomerId: customer, Total: 2 }, `"${bare}"`);
      expectStatus(quoted, 201);
      const replay = await create({ CustomerId: customer, Total: 2 }, bare);
      assert.equal(replay.headers.get('idempotent-replayed'), 'true');
      assert.equal(replay.text, quoted.text);
      const reused = await create({ CustomerId: customer, Total: 3 }, `"${bare}"`);
      expectStatus(reused, 409);
      assert.deepEqual(await ordersOf(customer), [quoted.json.Id]);
    });

    test('validation failures (422) are not stored: the same key then works with a valid body', async () => {
      const customer = randomUUID();
      const key = newKey();
      const schemaInvalid = await create({ CustomerId: customer, Total: 'twelve' }, key);
      expectStatus(schemaInvalid, 422);
      const ruleInvalid = await create({ CustomerId: customer, Total: 1, Currency: 'XYZ' }, key);
      assert.equal(ruleInvalid.status, 422, 'a currency that passes the schema but is not ISO 4217');
      assert.equal(ruleInvalid.headers.get('idempotent-replayed'), null);
      const again = await create({ CustomerId: customer, Total: 1, Currency: 'XYZ' }, key);
      assert.equal(again.status, 422, 'the failure was not stored for replay');
      assert.equal(again.headers.get('idempotent-replayed'), null);
      const valid = await create({ CustomerId: customer, Total: 12 }, key);
      expectStatus(valid, 201);
      assert.equal(valid.headers.get('idempotent-replayed'), null);
      assert.deepEqual(await ordersOf(customer), [valid.json.Id]);
    });

    test('a failed pay (409) is not stored: the same key is evaluated again, not replayed', async () => {
      const customer = randomUUID();
      const created = await create({ CustomerId: customer, Total: 2 });
      await call(server.url, 'POST', `/api/orders/${created.json.Id}/cancel`, { token });
      const key = newKey();
      const refused = await pay(created.json.Id, key);
      expectStatus(refused, 409);
      assert.equal(refused.json.currentStatus, 'cancelled');
      const again = await pay(created.json.Id, key);
      expectStatus(again, 409);
      assert.equal(again.headers.get('idempotent-replayed'), null, 'evaluated again, not replayed');
    });

    test('50 concurrent creates with one key create exactly one order; the others replay it or get 409 with Retry-After', async () => {
      const customer = randomUUID();
      const key = newKey();
      const body = { CustomerId: customer, Total: 99.99 };
      const responses = await Promise.all(Array.from({ length: 50 }, () => create(body, key)));
      const created = responses.filter((r) => r.status === 201);
      const busy = responses.filter((r) => r.status === 409);
      assert.equal(created.length + busy.length, 50, `statuses: ${responses.map((r) => r.status).join(',')}`);
      const originals = created.filter((r) => r.headers.get('idempotent-replayed') === null);
      assert.equal(originals.length, 1, 'exactly one response is the original');
      for (const r of created) assert.equal(r.text, originals[0]!.text);
      for (const r of busy) {
        assert.equal(problemType(r), 'idempotency-key-in-flight');
        assert.match(r.headers.get('retry-after') ?? '', /^\d+$/);
      }
      assert.deepEqual(await ordersOf(customer), [originals[0]!.json.Id]);
      const after = await create(body, key);
      expectStatus(after, 201);
      assert.equal(after.headers.get('idempotent-replayed'), 'true');
      assert.equal(after.text, originals[0]!.text);
    });

    test('an expired key is purged and can then be used again for a new request', async () => {
      const customer = randomUUID();
      const key = newKey();
      const first = await create({ CustomerId: customer, Total: 5 }, key);
      expectStatus(first, 201);
      assert.equal((await create({ CustomerId: customer, Total: 6 }, key)).status, 409, 'still live before expiry');
      const purged = await purgeExpiredKeys(server.app.database.db, new Date(Date.now() + 61_000));
      assert.ok(purged >= 1, `purged ${purged}`);
      const reused = await create({ CustomerId: customer, Total: 6 }, key);
      expectStatus(reused, 201);
      assert.equal(reused.headers.get('idempotent-replayed'), null);
      assert.notEqual(reused.json.Id, first.json.Id);
      assert.equal((await ordersOf(customer)).length, 2);
    });

    test('a key whose expiry has passed is treated as unused even before the purge runs', async () => {
      const customer = randomUUID();
      const key = newKey();
      const body = { CustomerId: customer, Total: 8 };
      const past = new Date(Date.now() - 1000);
      await server.app.database.db
        .insertInto('idempotency_keys')
        .values({
          caller: 'client:test-client',
          key,
          fingerprint: 'something-else',
          state: 'done',
          locked_until: toDbTime(past),
          response_status: 201,
          response_headers: '{}',
          response_body: '{"stale":true}',
          created_at: toDbTime(new Date(Date.now() - 120_000)),
          expires_at: toDbTime(past),
        })
        .execute();
      const res = await create(body, key);
      expectStatus(res, 201);
      assert.equal(res.headers.get('idempotent-replayed'), null);
      assert.equal(res.json.CustomerId, customer);
    });

    test('an in-flight claim whose lock expired is taken over and the request succeeds', async () => {
      const customer = randomUUID();
      const key = newKey();
      const body = { CustomerId: customer, Total: 4.5, Currency: 'USD' };
      await insertInFlightClaim(key, body, -5_000);
      const res = await create(body, key);
      expectStatus(res, 201);
      assert.equal(res.headers.get('idempotent-replayed'), null);
      const replay = await create(body, key);
      assert.equal(replay.headers.get('idempotent-replayed'), 'true', 'the taken-over claim stored its result');
      assert.equal(replay.text, res.text);
      assert.deepEqual(await ordersOf(customer), [res.json.Id]);
    });

    test("an in-flight claim whose lock is still valid gives 409 with the lock's remaining time as Retry-After and runs nothing", async () => {
      const customer = randomUUID();
      const key = newKey();
      const body = { CustomerId: customer, Total: 4.5, Currency: 'USD' };
      const lockedUntil = Date.now() + 30_000;
      await insertInFlightClaim(key, body, lockedUntil - Date.now());
      const sentAt = Date.now();
      const res = await create(body, key);
      assertRetryAfterIsRemainingLock(res, lockedUntil, sentAt, Date.now());
      assert.deepEqual(await ordersOf(customer), []);
    });
  });

  describe(`Idempotency-Key left in flight by a crashed request [${dialect}]`, () => {
    const LOCK_SECONDS = 3;
    let server: TestServer;
    let token: string;
    before(
      async () =>
        ({ server, token } = await startWithClientToken(dialect, { IDEMPOTENCY_LOCK_SECONDS: String(LOCK_SECONDS) })),
    );
    after(() => server.close());

    const create = (body: unknown, key: string) =>
      call(server.url, 'POST', '/api/orders', { token, body, headers: { 'idempotency-key': key } });

    test("Retry-After is the time left on the dead request's lock, and once it has passed the key is taken over", async () => {
      const customer = randomUUID();
      const key = `key-${randomUUID()}`;
      const body = { CustomerId: customer, Total: 12.5, Currency: 'EUR' };
      // The row exactly as a request that claimed the key and then died leaves it (PostgreSQL commits the
      // claim on its own; see src/idempotency/idempotency.ts): in flight, locked for IDEMPOTENCY_LOCK_SECONDS.
      const claimedAt = Date.now();
      const lockedUntil = claimedAt + LOCK_SECONDS * 1000;
      await server.app.database.db
        .insertInto('idempotency_keys')
        .values({
          caller: 'client:test-client',
          key,
          fingerprint: requestFingerprint('POST', '/api/orders', body),
          state: 'in_flight',
          locked_until: toDbTime(new Date(lockedUntil)),
          created_at: toDbTime(new Date(claimedAt)),
          expires_at: toDbTime(new Date(claimedAt + 86_400_000)),
          response_status: null,
          response_headers: null,
          response_body: null,
        })
        .execute();

      const sentAt = Date.now();
      const first = await create(body, key);
      const answeredAt = Date.now();
      assertRetryAfterIsRemainingLock(first, lockedUntil, sentAt, answeredAt);
      const advised = answeredAt + Number(first.headers.get('retry-after')) * 1000;

      // Retry until the takeover: each refusal names what is left of the lock, and is only allowed for a
      // retry sent before the lock ended (the server reads its clock after the send); the first success
      // comes after the lock ended. Since Retry-After rounds up (advised >= lockedUntil), a client that
      // waits as advised is never refused. No bound on how soon after the lock a retry is sent: a busy
      // machine delays the client, not the server's decision.
      assert.ok(advised >= lockedUntil, `Retry-After advised ${lockedUntil - advised} ms before the lock ended`);
      let taken: CallResult | undefined;
      await waitUntil(
        async () => {
          const retrySentAt = Date.now();
          const res = await create(body, key);
          const retryAnsweredAt = Date.now();
          if (res.status !== 201) {
            assertRetryAfterIsRemainingLock(res, lockedUntil, retrySentAt, retryAnsweredAt);
            assert.ok(retrySentAt < lockedUntil, `refused ${retrySentAt - lockedUntil} ms after the lock ended`);
            return false;
          }
          assert.ok(
            retryAnsweredAt >= lockedUntil,
            `taken over ${lockedUntil - retryAnsweredAt} ms before the lock ended`,
          );
          taken = res;
          return true;
        },
        lockedUntil - Date.now() + 5_000,
        () => "the key was not taken over within 5 s of its lock's end",
      );
      assert.ok(taken);
      assert.equal(taken.headers.get('idempotent-replayed'), null, 'the takeover ran the request');
      const replay = await create(body, key);
      assert.equal(replay.status, 201, replay.text);
      assert.equal(replay.headers.get('idempotent-replayed'), 'true');
      assert.equal(replay.text, taken.text);
      const orders = await call(server.url, 'GET', `/api/orders?limit=100&CustomerId=${customer}`, { token });
      assert.deepEqual(
        orders.json.Items.map((o: { Id: number }) => o.Id),
        [taken.json.Id],
        'one order',
      );
    });
  });
}
