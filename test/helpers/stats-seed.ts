// Webhook deliveries and attempts written straight into the tables at exact times, states and durations,
// for the overview statistics (GET /api/admin/stats): one endpoint and event hold them all.
import { randomBytes } from 'node:crypto';
import { toDbTime } from '../../src/db/codecs.ts';
import type { Db } from '../../src/db/database.ts';

export interface SeededStatsDelivery {
  createdAt: Date;
  state: 'pending' | 'succeeded' | 'failed';
  /** When it settled (or last changed); createdAt when not given. */
  updatedAt?: Date;
}

export interface SeededAttempt {
  startedAt: Date;
  durationMs: number;
  /** null: a 2xx. */
  errorKind: string | null;
}

const id = (prefix: string) => `${prefix}_${randomBytes(16).toString('hex')}`;

export class StatsSeed {
  readonly #db: Db;
  readonly #endpointId = id('whep');
  #attemptHolder: string | undefined;

  constructor(db: Db) {
    this.#db = db;
  }

  async #endpoint(): Promise<string> {
    const at = toDbTime(new Date(0));
    await this.#db
      .insertInto('webhook_endpoints')
      .values({
        id: this.#endpointId,
        owner: 'client-stats',
        url: 'https://receiver.example/hook',
        description: '',
        event_types: '["*"]',
        enabled: 1,
        disabled_reason: null,
        secret: 'sealed-placeholder', // never opened: nothing is sent
        previous_secret: null,
        previous_secret_expires_at: null,
        failing_since: null,
        created_at: at,
        updated_at: at,
      })
      .onConflict((oc) => oc.column('id').doNothing())
      .execute();
    return this.#endpointId;
  }

  async delivery(seed: SeededStatsDelivery): Promise<string> {
    const endpointId = await this.#endpoint();
    const eventId = id('evt');
    const deliveryId = id('dlv');
    const created = toDbTime(seed.createdAt);
    await this.#db
      .insertInto('webhook_events')
      .values({
        id: eventId,
        type: 'order.created',
        occurred_at: created,
        data: '{}',
        owner: null,
        customer_id: null,
        order_id: null,
      })
      .execute();
    await this.#db
      .insertInto('webhook_deliveries')
      .values({
        id: deliveryId,
        event_id: eventId,
        endpoint_id: endpointId,
        state: seed.state,
        attempt_count: 0,
        retry_index: 0,
        next_attempt_at: created,
        lease_owner: null,
        lease_until: null,
        last_status_code: null,
        last_error: null,
        created_at: created,
        updated_at: toDbTime(seed.updatedAt ?? seed.createdAt),
      })
      .execute();
    return deliveryId;
  }

  /** Attempts of one settled delivery created long before (it never counts as pending in a recent window). */
  async attempts(attempts: SeededAttempt[]): Promise<void> {
    this.#attemptHolder ??= await this.delivery({ createdAt: new Date(0), state: 'succeeded' });
    const deliveryId = this.#attemptHolder;
    for (let from = 0; from < attempts.length; from += 500)
      await this.#db
        .insertInto('webhook_attempts')
        .values(
          attempts.slice(from, from + 500).map((a, n) => ({
            delivery_id: deliveryId,
            attempt: from + n + 1,
            started_at: toDbTime(a.startedAt),
            duration_ms: a.durationMs,
            status_code: a.errorKind === null ? 200 : a.errorKind === 'status' ? 500 : null,
            error_kind: a.errorKind,
            error_detail: a.errorKind,
            response_excerpt: null,
          })),
        )
        .execute();
  }
}
