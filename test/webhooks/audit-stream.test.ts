// The audit trail streamed out (docs/security.md, "Streaming the audit trail"): an admin registers an endpoint for
// `audit.entry`; every entry appended afterwards arrives there signed (verified with the standardwebhooks library),
// at least once (through a receiver that fails first), as GET /api/admin/audit shows it; no client's endpoint or
// event feed ever sees one; and relays running at once turn each entry into exactly one event.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { relayAuditEntries } from '../../src/webhooks/outbox/audit-relay.ts';
import { testDialects } from '../helpers/databases.ts';
import { expectProblem } from '../helpers/expect.ts';
import { call, CUSTOMER, type CallResult } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import {
  LOCAL_WEBHOOKS_ENV,
  registerEndpoint,
  startReceiver,
  waitUntil,
  type TestReceiver,
} from '../helpers/webhook-receiver.ts';

const ENV = { ...LOCAL_WEBHOOKS_ENV, WEBHOOK_RETRY_SCHEDULE: '0s,100ms,100ms,100ms' };
const PASSWORD = 'correct horse battery staple';

function expectStatus(result: CallResult, status: number, what: string): CallResult {
  assert.equal(result.status, status, `${what}: ${result.status} ${result.text}`);
  return result;
}

interface AuditEntryEvent {
  Type: string;
  Data: { Id: string; Action: string; Seq: number; Hash: string; PreviousHash: string; Target: { Id: string } };
}

for (const dialect of testDialects()) {
  describe(`audit stream [${dialect}]`, () => {
    let server: TestServer;
    let receiver: TestReceiver;
    let admin: string;
    let auditor: string;
    let client: string;
    let siem: { id: string; secret: string };

    before(async () => {
      server = await startServer(dialect, ENV);
      receiver = await startReceiver();
      // The SIEM fails its first two deliveries: what it gets is retried until it answers 200.
      let siemRequests = 0;
      receiver.answer = (request) =>
        request.url === '/siem' && (siemRequests += 1) <= 2 ? { status: 503 } : { status: 200 };
      admin = await server.issuer.clientToken('admin:read admin:write', 'ops-bot');
      auditor = await server.issuer.clientToken('admin:read', 'auditor-bot');
      client = await server.issuer.clientToken('webhooks:manage events:read orders:write', 'client-alpha');
      await registerEndpoint(server, client, `${receiver.url}/client`, ['*']);
      const created = expectStatus(
        await call(server.url, 'POST', '/api/admin/webhook-endpoints', {
          token: admin,
          body: { Url: `${receiver.url}/siem`, Events: ['audit.entry'], Description: 'SIEM' },
        }),
        201,
        'registering the SIEM',
      );
      siem = { id: created.json.Id, secret: created.json.Secret };
      assert.equal(created.json.ClientId, 'signet:audit', created.text);
      assert.equal(created.headers.get('location'), `${server.url}/api/admin/webhook-endpoints/${siem.id}`);
    });
    after(async () => {
      await receiver?.close();
      await server?.close();
    });

    /** What the first SIEM received, each verified with its secret (a forged one throws). */
    function siemEvents(): AuditEntryEvent[] {
      return receiver.received
        .filter((d) => d.url === '/siem')
        .map((d) => new Webhook(siem.secret).verify(d.body, d.headers as Record<string, string>) as AuditEntryEvent)
        .filter((e) => e.Type === 'audit.entry');
    }

    async function auditEntry(action: string, target: string) {
      const query = new URLSearchParams({ action, target });
      const listed = expectStatus(
        await call(server.url, 'GET', `/api/admin/audit?${query}`, { token: admin }),
        200,
        'the audit trail',
      );
      assert.equal(listed.json.Items.length, 1, listed.text);
      return listed.json.Items[0];
    }

    test('an entry appended after registration arrives signed, retried until accepted, as the audit API shows it', async () => {
      const created = expectStatus(
        await call(server.url, 'POST', '/api/admin/users', {
          token: admin,
          body: { Email: `streamed-${dialect}@example.test`, Name: 'Streamed', Password: PASSWORD },
        }),
        201,
        'creating a user',
      );
      const entry = await auditEntry('user.created', created.json.Id);
      await waitUntil(
        () => siemEvents().some((e) => e.Data.Id === entry.Id),
        15_000,
        () =>
          `user.created ${entry.Id} never reached the SIEM; received: ${JSON.stringify(receiver.received.map((d) => d.body))}`,
      );
      const event = siemEvents().find((e) => e.Data.Id === entry.Id)!;
      const { Seq, Hash, PreviousHash, ...asListed } = event.Data;
      assert.deepEqual(asListed, entry);
      assert.match(Hash, /^[0-9a-f]{64}$/);
      assert.match(PreviousHash, /^[0-9a-f]{64}$/);
      assert.ok(Number.isInteger(Seq), JSON.stringify(event));
      // The registration's own entry was appended after the endpoint existed: it is streamed too.
      const registered = await auditEntry('webhook_endpoint.created', siem.id);
      await waitUntil(
        () => siemEvents().some((e) => e.Data.Id === registered.Id),
        15_000,
        () => `webhook_endpoint.created ${registered.Id} never reached the SIEM`,
      );
      // The first two answers were 503: those deliveries were retried until the SIEM took them.
      const logPath = `/api/admin/webhook-deliveries?endpoint_id=${siem.id}&event_type=audit.entry&limit=100`;
      let log: CallResult | undefined;
      await waitUntil(
        async () => {
          log = expectStatus(await call(server.url, 'GET', logPath, { token: admin }), 200, 'the SIEM delivery log');
          const items = log.json.Items as { State: string; AttemptCount: number }[];
          return items.every((d) => d.State === 'succeeded') && items.some((d) => d.AttemptCount > 1);
        },
        15_000,
        () => `the SIEM's deliveries were not all retried to success: ${log?.text}`,
      );
    });

    test('no client endpoint, client feed or client registration ever sees audit.entry', async () => {
      // An order event reaches the client's `*` endpoint; audit entries keep being appended meanwhile.
      expectStatus(
        await call(server.url, 'POST', '/api/orders', { token: client, body: { CustomerId: CUSTOMER, Total: 5 } }),
        201,
        'an order',
      );
      await waitUntil(
        () => receiver.received.some((d) => d.url === '/client' && d.body.includes('order.created')),
        15_000,
        () => 'the order event never reached the client endpoint',
      );
      await waitUntil(
        () => siemEvents().length > 0,
        15_000,
        () => 'no audit.entry reached the SIEM',
      );
      const toClients = receiver.received.filter((d) => d.url.startsWith('/client'));
      assert.ok(toClients.length > 0, 'the client endpoint received nothing at all');
      for (const delivery of toClients) assert.doesNotMatch(delivery.body, /audit\.entry/, delivery.body);
      const feed = expectStatus(await call(server.url, 'GET', '/api/events?limit=100', { token: client }), 200, 'feed');
      assert.ok(!feed.text.includes('audit.entry'), feed.text);
      const filtered = await call(server.url, 'GET', '/api/events?type=audit.entry', { token: client });
      expectProblem(filtered, 400, 'invalid-parameter');
      const subscribe = await call(server.url, 'POST', '/api/webhooks', {
        token: client,
        body: { Url: `${receiver.url}/client`, Events: ['order.created', 'audit.entry'] },
      });
      const problem = expectProblem(subscribe, 422, 'validation-error');
      const [error] = problem.errors as { pointer: string; detail: string }[];
      assert.equal(error?.pointer, '/Events/1', subscribe.text);
      assert.match(error?.detail ?? '', /admin/, subscribe.text);
    });

    test('an admin endpoint takes operator events only; the auditor may not register; client endpoints stay the client’s', async () => {
      for (const Events of [['order.created'], ['*'], ['audit.entry', 'webhook.ping']]) {
        const refused = await call(server.url, 'POST', '/api/admin/webhook-endpoints', {
          token: admin,
          body: { Url: `${receiver.url}/siem`, Events },
        });
        expectProblem(refused, 422, 'validation-error');
      }
      const byAuditor = await call(server.url, 'POST', '/api/admin/webhook-endpoints', {
        token: auditor,
        body: { Url: `${receiver.url}/siem`, Events: ['audit.entry'] },
      });
      assert.equal(byAuditor.status, 403, byAuditor.text);
      const clientsEndpoint = (await registerEndpoint(server, client, `${receiver.url}/client2`, ['order.created']))
        .json.Id as string;
      for (const [method, path] of [
        ['DELETE', `/api/admin/webhook-endpoints/${clientsEndpoint}`],
        ['POST', `/api/admin/webhook-endpoints/${clientsEndpoint}/rotate-secret`],
        ['POST', `/api/admin/webhook-endpoints/${clientsEndpoint}/ping`],
      ] as const) {
        const refused = await call(server.url, method, path, { token: admin });
        expectProblem(refused, 403, 'forbidden');
        assert.match(refused.json.detail, /client-alpha/, refused.text);
      }
      const patched = await call(server.url, 'PATCH', `/api/admin/webhook-endpoints/${clientsEndpoint}`, {
        token: admin,
        body: { Url: `${receiver.url}/elsewhere` },
      });
      expectProblem(patched, 403, 'forbidden');
      const missing = await call(
        server.url,
        'DELETE',
        '/api/admin/webhook-endpoints/whep_00000000000000000000000000000000',
        {
          token: admin,
        },
      );
      expectProblem(missing, 404, 'not-found');
    });

    test('an operator endpoint is pinged, patched, rotated and deleted through the admin API, each audited', async () => {
      const made = expectStatus(
        await call(server.url, 'POST', '/api/admin/webhook-endpoints', {
          token: admin,
          body: { Url: `${receiver.url}/siem2`, Events: ['audit.entry'] },
        }),
        201,
        'a second SIEM',
      );
      const id = made.json.Id as string;
      const pinged = expectStatus(
        await call(server.url, 'POST', `/api/admin/webhook-endpoints/${id}/ping`, { token: admin }),
        202,
        'ping',
      );
      assert.equal(pinged.json.EventType, 'webhook.ping', pinged.text);
      assert.equal(pinged.headers.get('location'), pinged.json._links.self.href);
      await waitUntil(
        () => receiver.received.some((d) => d.body.includes(id) && d.body.includes('webhook.ping')),
        15_000,
        () => 'the ping never arrived',
      );
      const patched = expectStatus(
        await call(server.url, 'PATCH', `/api/admin/webhook-endpoints/${id}`, {
          token: admin,
          body: { Description: 'second SIEM', Enabled: false },
        }),
        200,
        'patch',
      );
      assert.equal(patched.json.Enabled, false, patched.text);
      const rotated = expectStatus(
        await call(server.url, 'POST', `/api/admin/webhook-endpoints/${id}/rotate-secret`, { token: admin }),
        200,
        'rotate',
      );
      assert.match(rotated.json.Secret, /^whsec_/);
      expectStatus(
        await call(server.url, 'DELETE', `/api/admin/webhook-endpoints/${id}`, { token: admin }),
        204,
        'delete',
      );
      for (const action of ['webhook_endpoint.updated', 'webhook_endpoint.secret_rotated', 'webhook_endpoint.deleted'])
        assert.equal((await auditEntry(action, id)).Actor.Id, 'ops-bot');
    });

    test('while no operator endpoint is enabled the stream pauses, and resumes where it stopped', async () => {
      expectStatus(
        await call(server.url, 'POST', `/api/admin/webhook-endpoints/${siem.id}/disable`, { token: admin }),
        200,
        'disable',
      );
      const during = expectStatus(
        await call(server.url, 'POST', '/api/admin/users', {
          token: admin,
          body: { Email: `paused-${dialect}@example.test`, Name: 'Paused', Password: PASSWORD },
        }),
        201,
        'a user created while the stream is paused',
      );
      const entry = await auditEntry('user.created', during.json.Id);
      // Two relay rounds at least: the paused stream wrote no event for it.
      const { db } = server.app.database;
      const { outbox } = server.app.webhooks.context;
      assert.equal(await relayAuditEntries(db, outbox), 0, 'a paused stream relays nothing');
      assert.ok(!siemEvents().some((e) => e.Data.Id === entry.Id));
      expectStatus(
        await call(server.url, 'POST', `/api/admin/webhook-endpoints/${siem.id}/enable`, { token: admin }),
        200,
        'enable',
      );
      await waitUntil(
        () => siemEvents().some((e) => e.Data.Id === entry.Id),
        15_000,
        () => `the entry appended during the pause (${entry.Id}) never arrived after enabling`,
      );
    });

    test('relays running at once turn each entry into exactly one event', async () => {
      const { db } = server.app.database;
      const { outbox } = server.app.webhooks.context;
      for (let i = 0; i < 30; i += 1)
        expectStatus(
          await call(server.url, 'POST', '/api/admin/users', {
            token: admin,
            body: { Email: `burst-${i}-${dialect}@example.test`, Name: `Burst ${i}`, Password: PASSWORD },
          }),
          201,
          'a burst user',
        );
      // Five relays besides the server's own, racing for the same entries.
      await Promise.all(Array.from({ length: 5 }, () => relayAuditEntries(db, outbox, 7)));
      await waitUntil(
        async () => {
          const position = await db.selectFrom('audit_stream').select('last_seq').executeTakeFirstOrThrow();
          const newest = await db
            .selectFrom('audit_log')
            .select('seq')
            .orderBy('seq', 'desc')
            .executeTakeFirstOrThrow();
          return Number(position.last_seq) === Number(newest.seq);
        },
        15_000,
        () => 'the relay never caught up with the trail',
      );
      const events = await db.selectFrom('webhook_events').select('data').where('type', '=', 'audit.entry').execute();
      const streamed = events.map((e) => JSON.parse(e.data) as { Id: string; Seq: number });
      const ids = streamed.map((e) => e.Id);
      assert.equal(new Set(ids).size, ids.length, `an entry became two events: ${ids.join(' ')}`);
      // The stream started at the SIEM's registration (the client's earlier entries are the trail's past); every
      // entry since is an event, none skipped.
      const first = Math.min(...streamed.map((e) => e.Seq));
      const registration = await auditEntry('webhook_endpoint.created', siem.id);
      const registrationSeq = await db
        .selectFrom('audit_log')
        .select('seq')
        .where('id', '=', registration.Id)
        .executeTakeFirstOrThrow();
      assert.equal(
        first,
        Number(registrationSeq.seq),
        'the first entry streamed is the registration of the first operator endpoint',
      );
      const since = await db.selectFrom('audit_log').select('id').where('seq', '>=', first).execute();
      assert.deepEqual(new Set(ids), new Set(since.map((row) => row.id)));
    });
  });
}
