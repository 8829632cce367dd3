// Reconciliation (docs/guides/receiving-webhooks.md): events are lost when the consumer stays down past the
// producer's retry window, so the consumer also reads the producer's event list (GET /api/events, in
// commit order, with an opaque cursor) and enqueues every event it has not seen. The inbox dedupes by
// event id, so an event that also arrives by webhook is processed once.
import { request } from 'undici';
import type { Inbox } from './inbox.ts';
import { TokenSource } from './token-source.ts';
import type { WorkerLog } from './worker.ts';

export interface ReconcilerOptions {
  /** The producer's base URL. */
  from: string;
  clientId: string;
  clientSecret: string;
  /** The inbox source name the producer's webhooks arrive under, so event ids dedupe across both. */
  source: string;
  inbox: Inbox;
  /**
   * Only these event types (the producer's `type=` filter), e.g. the ones the webhook endpoint
   * subscribes to; every type the client may read when absent (pings to other endpoints included).
   */
  types?: readonly string[];
  intervalMs?: number;
  onEnqueued?: () => void;
  log?: WorkerLog;
}

interface EventPage {
  items: Record<string, unknown>[];
  nextCursor: string | undefined;
}

const PAGE_SIZE = 100;
const DEFAULT_INTERVAL_MS = 60_000;

function parsePage(body: unknown): EventPage {
  const page = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  if (!Array.isArray(page.Items)) throw new Error('the event list answered without Items');
  const items = page.Items as Record<string, unknown>[];
  for (const item of items) {
    if (typeof item?.Id !== 'string' || typeof item.Type !== 'string')
      throw new Error('the event list holds an event without Id or Type');
  }
  return {
    items,
    nextCursor: typeof page.NextCursor === 'string' && page.NextCursor !== '' ? page.NextCursor : undefined,
  };
}

export class Reconciler {
  readonly #options: ReconcilerOptions;
  readonly #tokens: TokenSource;
  readonly #log: WorkerLog;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<number> | undefined;
  #started = false;

  constructor(options: ReconcilerOptions) {
    this.#options = options;
    this.#tokens = new TokenSource({
      from: options.from,
      clientId: options.clientId,
      clientSecret: options.clientSecret,
      scope: 'events:read',
    });
    this.#log = options.log ?? (() => {});
  }

  /** Pages from the stored cursor to the end; returns how many events were newly enqueued. */
  runOnce(): Promise<number> {
    // One pass at a time: two passes would read the same pages and race on the cursor.
    this.#running ??= this.#pass().finally(() => (this.#running = undefined));
    return this.#running;
  }

  start(): void {
    if (this.#started) return;
    this.#started = true;
    void this.#tick();
  }

  async stop(): Promise<void> {
    this.#started = false;
    clearTimeout(this.#timer);
    await this.#running?.catch(() => {});
  }

  async #tick(): Promise<void> {
    try {
      const enqueued = await this.runOnce();
      if (enqueued > 0)
        this.#log('receiver reconciliation enqueued missed events', { source: this.#options.source, enqueued });
    } catch (error) {
      this.#log('receiver reconciliation failed', {
        source: this.#options.source,
        error: error instanceof Error ? error.message : String(error),
      });
    }
    if (this.#started)
      this.#timer = setTimeout(() => void this.#tick(), this.#options.intervalMs ?? DEFAULT_INTERVAL_MS);
  }

  async #pass(): Promise<number> {
    const { inbox, source } = this.#options;
    let cursor = await inbox.getCursor(source);
    let enqueued = 0;
    for (;;) {
      const page = await this.#fetchPage(cursor);
      const added = await this.#enqueue(page.items);
      enqueued += added;
      if (added > 0) this.#options.onEnqueued?.();
      // The cursor is saved only after the page's events are committed: a crash re-reads the page
      // (deduped) instead of skipping it.
      if (page.nextCursor !== undefined && page.nextCursor !== cursor) await inbox.saveCursor(source, page.nextCursor);
      // The producer always returns a NextCursor (where to resume later); an empty page is the end.
      if (page.items.length === 0 || page.nextCursor === undefined || page.nextCursor === cursor) return enqueued;
      cursor = page.nextCursor;
    }
  }

  async #enqueue(items: Record<string, unknown>[]): Promise<number> {
    let added = 0;
    for (const item of items) {
      const outcome = await this.#options.inbox.record({
        source: this.#options.source,
        deliveryId: null,
        eventId: item.Id as string,
        eventType: item.Type as string,
        body: JSON.stringify(item),
        via: 'reconciliation',
        receivedAt: new Date(),
      });
      if (outcome === 'recorded') added += 1;
    }
    return added;
  }

  async #fetchPage(cursor: string | undefined): Promise<EventPage> {
    const url = new URL(`${this.#options.from.replace(/\/+$/, '')}/api/events`);
    url.searchParams.set('limit', String(PAGE_SIZE));
    if (this.#options.types?.length) url.searchParams.set('type', this.#options.types.join(','));
    if (cursor !== undefined) url.searchParams.set('after', cursor);
    let response = await this.#get(url);
    if (response.status === 401) {
      // A cached token can be revoked or outlive a key rotation: fetch a fresh one, once.
      this.#tokens.invalidate();
      response = await this.#get(url);
    }
    if (response.status !== 200) throw new Error(`GET ${url.pathname} answered ${response.status}`);
    return parsePage(JSON.parse(response.text));
  }

  async #get(url: URL): Promise<{ status: number; text: string }> {
    const token = await this.#tokens.token();
    const response = await request(url, { headers: { authorization: `Bearer ${token}`, accept: 'application/json' } });
    return { status: response.statusCode, text: await response.body.text() };
  }
}
