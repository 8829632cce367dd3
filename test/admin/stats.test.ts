// GET /api/admin/stats, the console's overview (docs/guides/admin-api.md, Overview): seeded attempts,
// deliveries and sign-ins at known times give exactly the expected buckets, success rate, percentiles and
// pending counts on both databases (and the same answer on both); real token requests and logins show up
// under their grant and outcome; a bad window is a 400 naming the parameter. Missing tokens and scopes:
// test/admin/admin-scopes.test.ts covers every admin operation; the token counter's own writes:
// test/auth-server/token-stats.test.ts.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { isDeepStrictEqual } from 'node:util';
import { recordAudit } from '../../src/audit/audit.ts';
import { startAuthServer, type AuthTestServer } from '../helpers/auth-server.ts';
import { testDialects } from '../helpers/databases.ts';
import { waitUntil } from '../helpers/deadline.ts';
import { call, type CallResult } from '../helpers/http.ts';
import { FlowError } from '../helpers/oauth-flow.ts';
import { authorizeWithLogin, exchangeCode, refresh, tokenFrom, tokenRequest } from '../helpers/oauth-requests.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { StatsSeed, type SeededAttempt } from '../helpers/stats-seed.ts';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
/** A whole hour, three hours ago: the window [BASE, BASE + 1 h) every seeded row is placed around. */
const BASE = Math.floor(Date.now() / HOUR) * HOUR - 3 * HOUR;
const at = (minutes: number, ms = 0) => new Date(BASE + minutes * MINUTE + ms);
const WINDOW = `since=${at(0).toISOString()}&until=${at(60).toISOString()}`;

/** Deterministic durations (a linear congruential generator): the same seed on both databases. */
function durations(count: number, seed: number): number[] {
  const out: number[] = [];
  let x = seed;
  for (let n = 0; n < count; n += 1) {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    out.push(x % 30_000);
  }
  return out;
}

/** The nearest-rank percentile: the ceil(p·n/100)-th smallest. */
function nearestRank(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.ceil((p * sorted.length) / 100) - 1]!;
}

const RANDOM = durations(537, 42);

const SEEDED_ATTEMPTS: SeededAttempt[] = [
  // Minute 0: two successes and a timeout; minute 5: a failed status.
  { startedAt: at(0), durationMs: 100, errorKind: null },
  { startedAt: at(0, 59_999), durationMs: 200, errorKind: null },
  { startedAt: at(0, 30_000), durationMs: 5000, errorKind: 'timeout' },
  { startedAt: at(5, 1), durationMs: 50, errorKind: 'status' },
  // Outside the window on both sides.
  { startedAt: at(0, -1), durationMs: 7, errorKind: null },
  { startedAt: at(60), durationMs: 7, errorKind: 'connection' },
  // Minute 20 (latency bucket 15–30): 1 … 100 ms.
  ...Array.from({ length: 100 }, (_, n) => ({ startedAt: at(20, n), durationMs: n + 1, errorKind: null })),
  // Minute 40 (latency bucket 30–45): pseudo-random durations, one in three a dns failure.
  ...RANDOM.map((d, n) => ({ startedAt: at(40, n * 10), durationMs: d, errorKind: n % 3 === 0 ? 'dns' : null })),
];

interface Stats {
  SinceUtc: string;
  UntilUtc: string;
  BucketSeconds: Record<string, number>;
  Webhooks: {
    Attempts: { At: string; Succeeded: number; Failed: number; FailedByKind: Record<string, number> }[];
    SuccessRate: number | null;
    Latency: { At: string; Count: number; P50Ms: number | null; P99Ms: number | null }[];
    Pending: { Count: number; OldestAgeSeconds: number | null; Series: { At: string; Count: number }[] };
  };
  Tokens: { At: string; Total: number; ByGrant: Record<string, number> }[];
  SignIns: { At: string; Succeeded: number; Failed: number }[];
}

const answers = new Map<string, Stats>();

for (const dialect of testDialects()) {
  describe(`GET /api/admin/stats over seeded data [${dialect}]`, () => {
    let server: TestServer;
    let reader: string;
    let stats: Stats;
    let requestedAt: { from: number; to: number };
    before(async () => {
      server = await startServer(dialect);
      reader = await server.issuer.userToken('admin:read');
      const db = server.app.database.db;
      const seed = new StatsSeed(db);
      await seed.attempts(SEEDED_ATTEMPTS);
      await seed.delivery({ createdAt: at(-60), state: 'pending' }); // pending throughout
      await seed.delivery({ createdAt: at(-30), state: 'succeeded', updatedAt: at(20) }); // pending until 10:20
      await seed.delivery({ createdAt: at(40), state: 'pending' }); // pending from minute 40
      await seed.delivery({ createdAt: at(5), state: 'failed', updatedAt: at(10) }); // never at a sample
      await seed.delivery({ createdAt: at(-120), state: 'failed', updatedAt: at(-60) }); // settled before
      await seed.delivery({ createdAt: at(15), state: 'succeeded', updatedAt: at(45) }); // pending at 30 and 45
      for (const [minute, action] of [
        [10, 'signin.succeeded'],
        [10, 'signin.succeeded'],
        [59, 'signin.succeeded'],
        [50, 'signin.failed'],
        [50, 'signin.failed'],
        [20, 'client.created'],
        [60, 'signin.failed'],
      ] as const)
        await recordAudit(db, {
          actor: { type: 'user', id: 'usr-1' },
          action,
          outcome: action === 'signin.failed' ? 'failure' : 'success',
          at: at(minute),
        });
      const from = Date.now();
      const res = await get(`?${WINDOW}`);
      requestedAt = { from, to: Date.now() };
      assert.equal(res.status, 200, res.text);
      stats = res.json as Stats;
      answers.set(dialect, stats);
    });
    after(() => server.close());

    const get = (query: string, token = reader): Promise<CallResult> =>
      call(server.url, 'GET', `/api/admin/stats${query}`, { token });

    test('the window and the bucket widths are stated', () => {
      assert.equal(stats.SinceUtc, at(0).toISOString());
      assert.equal(stats.UntilUtc, at(60).toISOString());
      assert.deepEqual(stats.BucketSeconds, { Attempts: 60, Latency: 900, Pending: 900, Tokens: 3600, SignIns: 3600 });
    });

    test('attempts per minute by outcome: every minute present, only the window counted', () => {
      const series = stats.Webhooks.Attempts;
      assert.equal(series.length, 60, JSON.stringify(series.slice(0, 3)));
      assert.deepEqual(
        series.map((b) => b.At),
        Array.from({ length: 60 }, (_, n) => at(n).toISOString()),
      );
      assert.deepEqual(series[0], { At: at(0).toISOString(), Succeeded: 2, Failed: 1, FailedByKind: { timeout: 1 } });
      assert.deepEqual(series[5], { At: at(5).toISOString(), Succeeded: 0, Failed: 1, FailedByKind: { status: 1 } });
      assert.deepEqual(series[20], { At: at(20).toISOString(), Succeeded: 100, Failed: 0, FailedByKind: {} });
      const dns = RANDOM.filter((_, n) => n % 3 === 0).length;
      // 537 attempts 10 ms apart from minute 40: all within it.
      assert.deepEqual(series[40], {
        At: at(40).toISOString(),
        Succeeded: RANDOM.length - dns,
        Failed: dns,
        FailedByKind: { dns },
      });
      const empty = series.filter((_, n) => ![0, 5, 20, 40].includes(n));
      assert.ok(
        empty.every((b) => b.Succeeded === 0 && b.Failed === 0 && Object.keys(b.FailedByKind).length === 0),
        JSON.stringify(empty.filter((b) => b.Succeeded || b.Failed)),
      );
    });

    test('the success rate is succeeded attempts over all attempts in the window', () => {
      const dns = RANDOM.filter((_, n) => n % 3 === 0).length;
      const total = 4 + 100 + RANDOM.length;
      assert.equal(stats.Webhooks.SuccessRate, (2 + 100 + RANDOM.length - dns) / total);
    });

    test('p50 and p99 per 15 minutes are the nearest-rank durations', () => {
      const randomP50 = nearestRank(RANDOM, 50);
      const randomP99 = nearestRank(RANDOM, 99);
      assert.deepEqual(stats.Webhooks.Latency, [
        // [50, 100, 200, 5000]: rank ceil(2) = 2 → 100, rank ceil(3.96) = 4 → 5000.
        { At: at(0).toISOString(), Count: 4, P50Ms: 100, P99Ms: 5000 },
        { At: at(15).toISOString(), Count: 100, P50Ms: 50, P99Ms: 99 },
        { At: at(30).toISOString(), Count: RANDOM.length, P50Ms: randomP50, P99Ms: randomP99 },
        { At: at(45).toISOString(), Count: 0, P50Ms: null, P99Ms: null },
      ]);
    });

    test('pending deliveries: the count and the oldest one’s age now, and the series from stored times', () => {
      const { Count, OldestAgeSeconds, Series } = stats.Webhooks.Pending;
      assert.equal(Count, 2);
      const oldest = at(-60).getTime();
      assert.ok(
        OldestAgeSeconds !== null &&
          OldestAgeSeconds >= (requestedAt.from - oldest) / 1000 &&
          OldestAgeSeconds <= (requestedAt.to - oldest) / 1000,
        `OldestAgeSeconds ${OldestAgeSeconds}`,
      );
      // At the end of each 15 minutes: 15 → the first, and the one settled at 20; 30 → the first, and the one
      // created at 15 (settled at 45); 45 → those two and the one created at 40; 60 → the first and that one.
      assert.deepEqual(Series, [
        { At: at(0).toISOString(), Count: 2 },
        { At: at(15).toISOString(), Count: 2 },
        { At: at(30).toISOString(), Count: 3 },
        { At: at(45).toISOString(), Count: 2 },
      ]);
    });

    test('sign-ins per hour by outcome come from the audit trail', () => {
      assert.deepEqual(stats.SignIns, [{ At: at(0).toISOString(), Succeeded: 3, Failed: 2 }]);
    });

    test('tokens: every hour and every grant present, 0 without counts', () => {
      assert.equal(stats.Tokens.length, 1);
      assert.equal(stats.Tokens[0]!.Total, 0);
      assert.deepEqual(Object.keys(stats.Tokens[0]!.ByGrant).sort(), [
        'authorization_code',
        'client_credentials',
        'other',
        'refresh_token',
        'urn:ietf:params:oauth:grant-type:device_code',
        'urn:openid:params:grant-type:ciba',
      ]);
    });

    test('a window not aligned on buckets has partial first and last buckets, counting only inside it', async () => {
      const res = await get(`?since=${at(0, 30_000).toISOString()}&until=${at(20, 50).toISOString()}`);
      assert.equal(res.status, 200, res.text);
      const body = res.json as Stats;
      assert.equal(body.Webhooks.Attempts.length, 21);
      assert.deepEqual(body.Webhooks.Attempts[0], {
        At: at(0).toISOString(),
        Succeeded: 1,
        Failed: 1,
        FailedByKind: { timeout: 1 },
      });
      assert.equal(body.Webhooks.Attempts[20]!.Succeeded, 50);
      assert.deepEqual(
        body.Webhooks.Latency.map((b) => b.Count),
        [3, 50],
      );
    });

    test('the default window is the last 24 hours, with 1440 minutes', async () => {
      const res = await get('');
      assert.equal(res.status, 200, res.text);
      const body = res.json as Stats;
      assert.equal(Date.parse(body.UntilUtc) - Date.parse(body.SinceUtc), 24 * HOUR);
      // 1441 when `since` is not on a whole minute: the first and last minutes are both partial.
      assert.ok([1440, 1441].includes(body.Webhooks.Attempts.length), String(body.Webhooks.Attempts.length));
      assert.equal(
        body.Webhooks.Attempts.reduce((n, b) => n + b.Succeeded + b.Failed, 0),
        SEEDED_ATTEMPTS.length,
      );
    });

    test('a bad window is a 400 problem naming the parameter', async () => {
      for (const [query, pointer] of [
        ['?since=yesterday', '/since'],
        ['?until=2026-13-01T00:00:00Z', '/until'],
        ['?since=0001-01-01T00:00:00%2B01:00', '/since'],
        ['?until=0000-01-01T00:00:00Z', '/until'],
        [`?since=${at(60).toISOString()}&until=${at(0).toISOString()}`, '/since'],
        [`?since=${at(0).toISOString()}&until=${at(0).toISOString()}`, '/since'],
        [`?since=${at(-24 * 60, -1).toISOString()}&until=${at(0).toISOString()}`, '/since'],
      ] as const) {
        const res = await get(query);
        assert.equal(res.status, 400, `${query}: ${res.text}`);
        assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/, query);
        const errors = (res.json.errors ?? []) as { pointer: string }[];
        assert.ok(
          errors.some((e) => e.pointer === pointer),
          `${query} names ${pointer}: ${res.text}`,
        );
      }
    });
  });
}

describe('both databases give the same overview of the same data', () => {
  test('SQLite and PostgreSQL answers are equal but for the pending age', (t) => {
    const [sqlite, postgres] = [answers.get('sqlite'), answers.get('postgres')];
    if (!sqlite || !postgres) return t.diagnostic('only one dialect ran (TEST_POSTGRES_URL unset)');
    const comparable = (s: Stats) => ({
      ...s,
      Webhooks: { ...s.Webhooks, Pending: { ...s.Webhooks.Pending, OldestAgeSeconds: 0 } },
    });
    assert.deepEqual(comparable(postgres), comparable(sqlite));
  });
});

for (const dialect of testDialects()) {
  describe(`tokens and sign-ins through the real endpoints [${dialect}]`, () => {
    let server: AuthTestServer;
    let adminToken: string;
    before(async () => {
      server = await startAuthServer(dialect);
      const admin = await server.createClient({
        grantTypes: ['client_credentials'],
        redirectUris: [],
        scopes: ['admin:read'],
      });
      const result = await tokenRequest(
        server,
        { grant_type: 'client_credentials', scope: 'admin:read' },
        { basic: [admin.clientId, admin.clientSecret!] },
      );
      adminToken = tokenFrom(result, 'access_token', 'client credentials for admin:read');
    });
    after(() => server?.close());

    async function totals(): Promise<{ tokens: Record<string, number>; signIns: { ok: number; failed: number } }> {
      const res = await call(server.url, 'GET', '/api/admin/stats', { token: adminToken });
      assert.equal(res.status, 200, res.text);
      const body = res.json as Stats;
      const tokens: Record<string, number> = {};
      for (const hour of body.Tokens)
        for (const [grant, n] of Object.entries(hour.ByGrant)) if (n) tokens[grant] = (tokens[grant] ?? 0) + n;
      const signIns = { ok: 0, failed: 0 };
      for (const hour of body.SignIns) {
        signIns.ok += hour.Succeeded;
        signIns.failed += hour.Failed;
      }
      return { tokens, signIns };
    }

    test('client credentials, a code exchange and a refresh are counted under their grant after the flush', async () => {
      const user = await server.createUser();
      const app = await server.createClient();
      await assert.rejects(
        authorizeWithLogin(
          server,
          app,
          { email: user.email, password: 'not the password' },
          { scope: 'openid orders:read' },
        ),
        FlowError,
      );
      const flow = await authorizeWithLogin(server, app, user, { scope: 'openid orders:read' });
      const tokens = await exchangeCode(server, app, flow);
      tokenFrom(await refresh(server, app, tokenFrom(tokens, 'refresh_token')));
      const expected = { client_credentials: 1, authorization_code: 1, refresh_token: 1 };
      let seen: Awaited<ReturnType<typeof totals>> | undefined;
      await waitUntil(
        async () => {
          seen = await totals();
          return isDeepStrictEqual(seen.tokens, expected);
        },
        20_000,
        () => `tokens ${JSON.stringify(expected)}; saw ${JSON.stringify(seen)}`,
      );
      assert.deepEqual(seen!.signIns, { ok: 1, failed: 1 }, 'one successful and one failed sign-in');
    });
  });
}
