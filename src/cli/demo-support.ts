// The demo's plumbing (src/cli/demo.ts): its progress output, its failure type, the shapes it reads
// from the API, and HTTP.
import { createServer } from 'node:net';
import { signBody } from '../receiver/index.ts';

class DemoFailure extends Error {}

export function check(condition: unknown, message: string): asserts condition {
  if (!condition) throw new DemoFailure(message);
}

export interface Reply {
  status: number;
  headers: Headers;
  text: string;
  json: Record<string, unknown>;
}

export interface Delivery {
  Id: string;
  EventId: string;
  EventType: string;
  State: 'pending' | 'succeeded' | 'failed';
  AttemptCount: number;
  LastError: string | null;
}

export interface Attempt {
  Attempt: number;
  StatusCode: number | null;
  ErrorKind: string | null;
}

export function expectStatus(reply: Reply, status: number, what: string): void {
  check(reply.status === status, `${what}: expected ${status}, got ${reply.status} ${reply.text.slice(0, 300)}`);
}

export async function request(
  method: string,
  url: string,
  options: { body?: unknown; raw?: string; form?: Record<string, string>; headers?: Record<string, string> } = {},
): Promise<Reply> {
  const headers: Record<string, string> = { ...options.headers };
  let body: string | undefined = options.raw;
  if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers['content-type'] = 'application/json';
  } else if (options.form) {
    body = new URLSearchParams(options.form).toString();
    headers['content-type'] = 'application/x-www-form-urlencoded';
  }
  const response = await fetch(url, { method, headers, body, signal: AbortSignal.timeout(10_000) });
  const text = await response.text();
  let json: Record<string, unknown> = {};
  try {
    const parsed: unknown = text ? JSON.parse(text) : {};
    if (parsed && typeof parsed === 'object') json = parsed as Record<string, unknown>;
  } catch {
    // not JSON: keep the text
  }
  return { status: response.status, headers: response.headers, text, json };
}

export function nextIn(at: unknown): string {
  const ms = typeof at === 'string' ? Date.parse(at) - Date.now() : Number.NaN;
  return Number.isNaN(ms) ? 'n/a' : `${(Math.max(0, ms) / 1000).toFixed(1)} s`;
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  check(typeof address === 'object' && address, 'no free port');
  return address.port;
}

/** The numbered steps and checks the demo prints, and how long it has run. */
export class Progress {
  readonly #started = performance.now();
  readonly #total: number;
  #step = 0;

  constructor(total: number) {
    this.#total = total;
  }

  heading(title: string): void {
    this.#step += 1;
    console.log(`\n${String(this.#step).padStart(2)}/${this.#total}  ${title}`);
  }

  ok(fact: string): void {
    console.log(`       ✓ ${fact}`);
  }

  note(fact: string): void {
    console.log(`         ${fact}`);
  }

  fail(err: unknown): void {
    const message =
      err instanceof DemoFailure ? err.message : err instanceof Error ? (err.stack ?? err.message) : String(err);
    console.log(`       ✗ ${message}`);
    console.log(`\nDemo FAILED at step ${this.#step}/${this.#total} after ${this.elapsed()}.`);
  }

  elapsed(): string {
    return `${((performance.now() - this.#started) / 1000).toFixed(1)} s`;
  }
}

/** A delivery signed as a producer would sign it, POSTed to a receiver (the demo's forged and duplicate cases). */
export function postSignedDelivery(
  url: string,
  delivery: { id: string; deliveryId: string; secret: string; type?: string },
): Promise<Reply> {
  const body = JSON.stringify({
    Id: delivery.id,
    Type: delivery.type ?? 'order.created',
    OccurredAtUtc: new Date().toISOString(),
    Timestamp: new Date().toISOString(),
    Data: {},
  });
  return request('POST', url, {
    raw: body,
    headers: {
      'content-type': 'application/json',
      'x-service-delivery': delivery.deliveryId,
      'x-service-event': delivery.type ?? 'order.created',
      'x-service-signature-256': signBody(body, delivery.secret),
    },
  });
}

const WAIT_MS = 20_000;

/** Polls `condition` until it holds, or fails after WAIT_MS saying what was seen. */
export async function waitFor(condition: () => boolean | Promise<boolean>, describe: () => string): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new DemoFailure(`timed out after ${WAIT_MS / 1000} s: ${describe()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
