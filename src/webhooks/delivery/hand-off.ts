// Deliveries this process commits go straight to its own dispatcher, written already leased to it:
// the claim (a SELECT of due rows and an UPDATE that leases them, ~40 µs per delivery) is skipped
// for work this process has just written and still holds in memory.
//
// Only after the transaction is durable (afterCommit, src/db/after-commit.ts): a rolled-back order is
// never delivered, and a client is never the second to hear of its own order. Whenever that cannot be
// promised (PostgreSQL, not in a transaction), or the dispatcher here has no room for the deliveries
// right now, they are written unleased and the dispatcher is woken to claim them, as before. A process
// that dies holding such a lease loses nothing: the lease expires like a claim's, and any dispatcher
// claims the delivery again (at least once).
import { afterCommit } from '../../db/after-commit.ts';
import type { Executor } from '../../db/executor.ts';
import { toDbTime } from '../../db/codecs.ts';
import type { DbTime } from '../../db/schema.ts';
import { toSendable, type SendableDelivery } from '../store/dispatch.repository.ts';

export interface HandOffLease {
  token: string;
  until: Date;
}

/** The in-process dispatcher, as the outbox sees it. */
export interface HandOffTarget {
  /** A lease for one delivery to each of these endpoints if they can be sent at once, else undefined. */
  offer(endpointIds: readonly string[]): HandOffLease | undefined;
  /** Called once the deliveries, leased with `lease`, are durably committed. */
  take(lease: HandOffLease, deliveries: SendableDelivery[]): void;
}

/** What the outbox just wrote, in its row shapes. */
interface FreshEvent {
  id: string;
  type: string;
  occurred_at: DbTime;
  data: string;
}

export interface FreshEndpoint {
  id: string;
  url: string;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: DbTime | null;
}

export interface LeaseColumns {
  lease_owner: string;
  lease_until: string;
}

/**
 * Asks `target` for a lease on the deliveries about to be inserted (delivery `ids[i]` to `endpoints[i]`)
 * and, if granted, registers their hand-off for after the commit. Returns the lease columns to insert
 * the rows with, or undefined: insert them unleased and wake the dispatcher as usual.
 */
export async function handOff(
  trx: Executor,
  target: HandOffTarget | undefined,
  event: FreshEvent,
  endpoints: readonly FreshEndpoint[],
  ids: readonly string[],
): Promise<LeaseColumns | undefined> {
  const lease = target?.offer(endpoints.map((e) => e.id));
  if (!target || !lease) return undefined;
  // Registered before the rows are written: should the insert fail, the transaction rolls back and
  // the callback is dropped with it.
  const registered = await afterCommit(trx, () => target.take(lease, sendable(event, endpoints, ids)));
  return registered ? { lease_owner: lease.token, lease_until: toDbTime(lease.until) } : undefined;
}

/** As the claim would have read them back (dispatch.repository.ts): first attempt, no retries yet. */
function sendable(event: FreshEvent, endpoints: readonly FreshEndpoint[], ids: readonly string[]): SendableDelivery[] {
  return endpoints.map((endpoint, i) =>
    toSendable({
      ...endpoint,
      id: ids[i]!,
      endpoint_id: endpoint.id,
      retry_index: 0,
      attempt_count: 0,
      event_id: event.id,
      type: event.type,
      occurred_at: event.occurred_at,
      data: event.data,
    }),
  );
}
