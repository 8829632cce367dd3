// A scrape never costs a database query of its own (docs/reference/metrics.md): the three webhook backlog
// gauges share one read of the delivery table, and scrapes within a second reuse it, however many arrive
// and however fast. Real scrapes over HTTP of the metrics listener, real backlog queries on every
// dialect, counted by a Kysely plugin on the connection they run through.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Fastify, { type FastifyInstance } from 'fastify';
import type { KyselyPlugin } from 'kysely';
import type { DatabaseHandle } from '../../src/db/database.ts';
import { metricsAccess } from '../../src/http/ops/metrics-access.ts';
import { registerMetricsListener } from '../../src/http/ops/metrics.ts';
import { createMetrics } from '../../src/metrics/metrics.ts';
import { deliveryBacklog } from '../../src/webhooks/store/backlog.repository.ts';
import { testDialects } from '../helpers/databases.ts';
import { useMigratedDatabase } from '../helpers/migrated-database.ts';
import { sample, scrape } from '../helpers/prometheus.ts';
import { metricsUrlOf } from '../helpers/server.ts';

/** The reuse window of src/metrics/metrics.ts (BACKLOG_READ_REUSE_MS). */
const REUSE_MS = 1000;
const SCRAPES = 40;

/** Counts every statement sent through the instance it is added to. */
function countingPlugin(): KyselyPlugin & { count: number } {
  const plugin = {
    count: 0,
    transformQuery: (args: Parameters<KyselyPlugin['transformQuery']>[0]) => {
      plugin.count += 1;
      return args.node;
    },
    transformResult: async (args: Parameters<KyselyPlugin['transformResult']>[0]) => args.result,
  };
  return plugin;
}

for (const dialect of testDialects()) {
  describe(`the webhook backlog behind /metrics (${dialect})`, () => {
    let handle: DatabaseHandle;
    useMigratedDatabase(dialect, (h) => (handle = h));
    let app: FastifyInstance;
    let base: string;
    let reads: ReturnType<typeof countingPlugin>;

    before(async () => {
      reads = countingPlugin();
      const counted = handle.db.withPlugin(reads);
      const metrics = createMetrics({ defaultMetrics: false });
      metrics.watchDeliveryBacklog(
        () => deliveryBacklog(counted, new Date()),
        (err) => assert.fail(String(err)),
      );
      app = Fastify();
      registerMetricsListener(app, metrics, {
        host: '127.0.0.1',
        port: 0,
        access: metricsAccess({ token: undefined, allow: undefined }),
        problemBase: () => 'http://127.0.0.1',
      });
      await app.ready();
      base = metricsUrlOf(app)!;
    });
    after(() => app?.close());

    test('concurrent scrapes share one backlog query', async () => {
      const texts = await Promise.all(Array.from({ length: SCRAPES }, () => scrape(base)));
      assert.equal(reads.count, 1, `${reads.count} backlog queries for ${SCRAPES} concurrent scrapes`);
      for (const text of texts) assert.equal(sample(text, 'signet_webhook_deliveries_pending'), 0, text);
    });

    test('back-to-back scrapes run at most one backlog query per reuse window', async () => {
      const before = reads.count;
      const started = performance.now();
      for (let i = 0; i < SCRAPES; i++) await scrape(base);
      const windows = Math.floor((performance.now() - started) / REUSE_MS) + 1;
      // A bound on what the cache allows however slow the machine is, not a timing expectation.
      assert.ok(
        reads.count - before <= windows,
        `${reads.count - before} backlog queries for ${SCRAPES} scrapes within ${windows} reuse window(s)`,
      );
    });
  });
}
