// What the consumer's handler receives: one event, whether it came by webhook or by reconciliation.
// Both carry the producer's event shape {"Id","Type","OccurredAtUtc","Data"}; a webhook adds Timestamp.
import type { InboxEntry } from './inbox.ts';

export interface ReceivedEvent {
  id: string;
  type: string;
  occurredAt: string;
  /** The delivery attempt's time (webhooks only). */
  timestamp?: string;
  data: unknown;
  deliveryId: string | null;
  source: string;
  via: 'webhook' | 'reconciliation';
}

export type EventHandler = (event: ReceivedEvent) => Promise<void> | void;

export function toReceivedEvent(entry: InboxEntry): ReceivedEvent {
  const body = JSON.parse(entry.body) as Record<string, unknown>;
  const event: ReceivedEvent = {
    id: entry.eventId,
    type: entry.eventType,
    occurredAt: typeof body.OccurredAtUtc === 'string' ? body.OccurredAtUtc : '',
    data: body.Data,
    deliveryId: entry.deliveryId,
    source: entry.source,
    via: entry.via,
  };
  if (typeof body.Timestamp === 'string') event.timestamp = body.Timestamp;
  return event;
}
