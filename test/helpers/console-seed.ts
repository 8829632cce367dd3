// The admin API to compare the console's pages with, and real deliveries for the console's delivery log and event browser (test/console/delivery-log.test.ts,
// event-browser.test.ts): orders and a ping made through the API, the dispatcher POSTing to a local
// receiver where the endpoint at /down answers 500 with FAILURE_BODY and the others 200.
import { randomUUID } from 'node:crypto';
import assert from 'node:assert/strict';
import type { AuthTestServer } from './auth-server.ts';
import { callExpecting } from './http.ts';
import { clientToken } from './portal.ts';
import {
  LOCAL_WEBHOOKS_ENV,
  registerEndpoint,
  startReceiver,
  waitUntil,
  type TestReceiver,
} from './webhook-receiver.ts';

/** One attempt each: a 500 fails the delivery for good at once, so the seed settles quickly. */
export const LOG_SEED_ENV = { ...LOCAL_WEBHOOKS_ENV, WEBHOOK_RETRY_SCHEDULE: '0s' };
export const FAILURE_BODY = 'receiver exploded: the database is locked';

export interface Delivery {
  Id: string;
  EventId: string;
  EventType: string;
  EndpointId: string;
  ClientId: string;
  State: string;
  Attempts: {
    StartedAtUtc: string;
    StatusCode: number | null;
    DurationMs: number;
    ErrorKind: string | null;
    ErrorDetail: string | null;
    ResponseExcerpt: string | null;
  }[];
}

export interface LogSeed {
  receiver: TestReceiver;
  /** An admin:read admin:write token, to compare the pages with the admin API. */
  ops: string;
  /** The endpoints: the shop's working and failing one (order.created), the CRM's ping endpoint. */
  ids: { ok: string; down: string; ping: string };
  /** The ids of the two orders made. */
  orders: number[];
  /** Every delivery once settled (5: two orders to two endpoints, one ping). */
  all: Delivery[];
  /** A minute before the seed: every delivery is later. */
  seededAt: number;
  /** The deliveries to the failing endpoint. */
  failed(): Delivery[];
  get: AdminApi['get'];
  close(): Promise<void>;
}

export interface AdminApi {
  /** An admin:read admin:write token of a new client. */
  token: string;
  /** GET `path` with the token, which must answer 200: the parsed body. */
  get(path: string): Promise<any>; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/** The admin API as an operator's client reads it, to compare the pages with. */
export async function adminApi(server: AuthTestServer): Promise<AdminApi> {
  const token = (await clientToken(server, 'admin:read admin:write')).token;
  return { token, get: async (path) => (await callExpecting(server.url, 'GET', path, 200, { token })).json };
}

/** Seeds the deliveries on `server` (started with LOG_SEED_ENV) and waits until none is pending. */
export async function seedDeliveryLog(server: AuthTestServer): Promise<LogSeed> {
  const receiver = await startReceiver();
  receiver.answer = (request) =>
    request.url?.endsWith('/down') ? { status: 500, body: FAILURE_BODY } : { status: 200 };
  const { token: ops, get } = await adminApi(server);
  const seededAt = Date.now() - 60_000;
  const shop = await clientToken(server, 'webhooks:manage orders:write');
  const crm = await clientToken(server, 'webhooks:manage');
  const register = async (token: string, url: string, events: string[]) =>
    (await registerEndpoint(server, token, url, events)).json.Id as string;
  const ids = {
    ok: await register(shop.token, `${receiver.url}/ok`, ['order.created']),
    down: await register(shop.token, `${receiver.url}/down`, ['order.created']),
    ping: await register(crm.token, `${receiver.url}/ok`, ['webhook.ping']),
  };
  const orders: number[] = [];
  for (let i = 0; i < 2; i++) {
    const body = { CustomerId: randomUUID(), Total: 10 + i };
    const created = await callExpecting(server.url, 'POST', '/api/orders', 201, { token: shop.token, body });
    orders.push(created.json.Id);
  }
  await callExpecting(server.url, 'POST', `/api/webhooks/${ids.ping}/ping`, 202, { token: crm.token }, 'ping');
  const all = await settled(get);
  assert.equal(all.length, 5, JSON.stringify(all));
  return {
    receiver,
    ops,
    ids,
    orders,
    all,
    seededAt,
    failed: () => all.filter((d) => d.EndpointId === ids.down),
    get,
    close: () => receiver.close(),
  };
}

/** Every delivery, once none is pending. */
async function settled(get: LogSeed['get']): Promise<Delivery[]> {
  let states = '';
  let items: Delivery[] = [];
  await waitUntil(
    async () => {
      items = (await get('/api/admin/webhook-deliveries?limit=100')).Items;
      states = items.map((d) => d.State).join();
      return !states.includes('pending');
    },
    20_000,
    () => `every delivery settled: ${states}`,
  );
  return items;
}
