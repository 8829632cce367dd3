// Webhook receiver for the webhooks benchmark: a plain node:http server on 127.0.0.1:0, in a process of
// its own, that does what a careful consumer does with every delivery: reads the raw body, verifies
// X-Service-Signature-256 (HMAC-SHA256 of the exact bytes, keyed with the endpoint's secret, compared in
// constant time), parses the JSON and answers 200. It counts verified deliveries per group (a group is
// the first path segment: `/<group>/<n>`, one group per Signet instance and one for the baseline) and
// records when each arrived, on the machine's wall clock with sub-millisecond resolution
// (performance.timeOrigin + performance.now(), the same clock as the load generator's).
//
// Started by bench/webhooks/webhooks.ts through fork() (IPC), speaking bench/lib/child-control.ts's messages (CPU
// time and ELU of this process per window) plus its own:
//   { type: 'endpoints', endpoints: { '/group/0': 'whsec_…', … } }  → { type: 'endpoints-set' }
//   { type: 'stats' }                                               → { type: 'stats', groups, at }
//   { type: 'record', group, on }    → { type: 'recording' }: start/stop keeping one latency sample per
//                                      verified delivery of the group
//   { type: 'samples', group }                                      → { type: 'samples', samples }
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { sendToParent, serveChildControl, type ControlReply } from '../lib/child-control.ts';

export interface GroupStats {
  /** Deliveries whose signature verified (each counted once per request, duplicates included). */
  verified: number;
  /** Bad or missing signature, unknown path, unparsable body. */
  rejected: number;
  /** The same X-Service-Delivery id seen again (at-least-once: allowed, but worth knowing). */
  duplicates: number;
  /** Receipt time of the first and the last verified delivery (ms since the epoch, fractional). */
  firstAt: number;
  lastAt: number;
  /** Raw body bytes of the verified deliveries. */
  bytes: number;
}

/** [order id (Data.Id), OccurredAtUtc in ms since the epoch, receipt in ms since the epoch (fractional)]. */
export type LatencySample = [number, number, number];

export type ReceiverRequest =
  | { type: 'endpoints'; endpoints: Record<string, string> }
  | { type: 'stats' }
  | { type: 'record'; group: string; on: boolean }
  | { type: 'samples'; group: string };

export type ReceiverMessage =
  | ControlReply
  | { type: 'ready'; url: string }
  | { type: 'endpoints-set' }
  | { type: 'recording' }
  | { type: 'stats'; groups: Record<string, GroupStats>; at: number }
  | { type: 'samples'; samples: LatencySample[] };

const SIGNATURE_HEADER = 'x-service-signature-256';
const DELIVERY_HEADER = 'x-service-delivery';
const PREFIX = 'sha256=';

const secrets = new Map<string, string>();
const groups = new Map<string, GroupStats>();
const seen = new Set<string>();
const recording = new Map<string, LatencySample[]>();
let requests = 0;

const wallClock = () => performance.timeOrigin + performance.now();

function statsOf(group: string): GroupStats {
  let stats = groups.get(group);
  if (!stats)
    groups.set(group, (stats = { verified: 0, rejected: 0, duplicates: 0, firstAt: NaN, lastAt: NaN, bytes: 0 }));
  return stats;
}

function verify(secret: string, body: Buffer, header: string | string[] | undefined): boolean {
  if (typeof header !== 'string' || !header.startsWith(PREFIX)) return false;
  const given = Buffer.from(header.slice(PREFIX.length), 'hex');
  const expected = createHmac('sha256', secret).update(body).digest();
  return given.length === expected.length && timingSafeEqual(given, expected);
}

const server = createServer((request, response) => {
  requests++;
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.on('end', () => {
    const receivedAt = wallClock();
    const path = request.url ?? '';
    const stats = statsOf(path.split('/')[1] ?? '');
    const secret = secrets.get(path);
    const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
    let event: { OccurredAtUtc?: string; Data?: { Id?: number } } | undefined;
    if (secret !== undefined && verify(secret, body, request.headers[SIGNATURE_HEADER])) {
      try {
        event = JSON.parse(body.toString('utf8'));
      } catch {
        event = undefined;
      }
    }
    if (!event) {
      stats.rejected++;
      response.writeHead(400, { 'content-length': '0' }).end();
      return;
    }
    stats.verified++;
    stats.bytes += body.length;
    if (Number.isNaN(stats.firstAt)) stats.firstAt = receivedAt;
    stats.lastAt = receivedAt;
    const id = request.headers[DELIVERY_HEADER];
    if (typeof id === 'string') {
      if (seen.has(id)) stats.duplicates++;
      else seen.add(id);
    }
    const samples = recording.get(path.split('/')[1] ?? '');
    if (samples) samples.push([Number(event.Data?.Id), Date.parse(event.OccurredAtUtc ?? ''), receivedAt]);
    response.writeHead(200, { 'content-length': '0' }).end();
  });
});
// Connections stay open between phases (undici's pools keep them 30 s, the dispatcher's too).
server.keepAliveTimeout = 60_000;

async function shutdown(code: number): Promise<never> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  process.exit(code);
}

serveChildControl({ requestCount: () => requests, shutdown });

process.on('message', (message: ReceiverRequest) => {
  switch (message.type) {
    case 'endpoints':
      for (const [path, secret] of Object.entries(message.endpoints)) secrets.set(path, secret);
      sendToParent({ type: 'endpoints-set' } satisfies ReceiverMessage);
      break;
    case 'stats':
      sendToParent({ type: 'stats', groups: Object.fromEntries(groups), at: wallClock() } satisfies ReceiverMessage);
      break;
    case 'record':
      if (message.on) recording.set(message.group, recording.get(message.group) ?? []);
      else recording.delete(message.group);
      sendToParent({ type: 'recording' } satisfies ReceiverMessage);
      break;
    case 'samples':
      sendToParent({ type: 'samples', samples: recording.get(message.group) ?? [] } satisfies ReceiverMessage);
      recording.delete(message.group);
      break;
  }
});

server.listen(0, '127.0.0.1', () =>
  sendToParent({
    type: 'ready',
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
  } satisfies ReceiverMessage),
);
