// The dispatcher's LISTEN connection on PostgreSQL: a server that stops answering while it connects
// does not leave it waiting for ever; it gives up, retries, and hears commits again once the server
// answers. PostgreSQL only.
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { pino } from 'pino';
import { listenForCommits } from '../../src/webhooks/delivery/commit-listener.ts';
import { WAKE_CHANNEL } from '../../src/webhooks/outbox/events.outbox.ts';
import { createTestDatabase, testDialects, type TestDatabase } from '../helpers/databases.ts';
import { TcpProxy } from '../helpers/tcp-proxy.ts';
import { waitUntil } from '../helpers/webhook-receiver.ts';

if (testDialects().includes('postgres'))
  describe('the webhook commit listener [postgres]', () => {
    let database: TestDatabase;
    before(async () => {
      database = await createTestDatabase('postgres');
    });
    after(() => database.drop());

    test('a server that stalls while the listener connects: it gives up, retries, and hears commits once the server answers', async () => {
      const proxy = TcpProxy.for(database.url, 5432);
      await proxy.start();
      proxy.stall();
      let heard = 0;
      const listener = listenForCommits(proxy.rewrite(database.url), () => heard++, pino({ level: 'silent' }));
      try {
        await waitUntil(
          () => proxy.accepted >= 2,
          20_000,
          () => `the listener is still waiting on its first connection (${proxy.accepted} accepted)`,
        );
        proxy.resume();
        await waitUntil(
          () => heard >= 1,
          20_000,
          () => 'the listener never connected after the stall',
        );
        const before = heard;
        await waitUntil(
          async () => {
            await notify(database.url);
            return heard > before;
          },
          10_000,
          () => 'a NOTIFY was not heard',
        );
      } finally {
        await listener.close();
        await proxy.close();
      }
    });
  });

async function notify(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('select pg_notify($1, $2)', [WAKE_CHANNEL, 'test']);
  } finally {
    await client.end();
  }
}
