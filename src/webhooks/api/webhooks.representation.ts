// How endpoints, deliveries and events look on the wire: PascalCase members, HAL-style absolute links.
import type { AttemptRecord, DeliveryRecord } from '../store/deliveries.repository.ts';
import type { EndpointRecord } from '../store/endpoints.repository.ts';
import type { EventRecord } from '../store/events.repository.ts';
import type { Static } from 'typebox';
import type { Attempt, Delivery, Endpoint, Event } from './webhooks.schemas.ts';

type Links = Record<string, { href: string; method: string }>;

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export function endpointUrl(baseUrl: string, id: string): string {
  return `${baseUrl}/api/webhooks/${id}`;
}

export function deliveryUrl(baseUrl: string, id: string): string {
  return `${baseUrl}/api/webhooks/deliveries/${id}`;
}

function eventUrl(baseUrl: string, id: string): string {
  return `${baseUrl}/api/events/${id}`;
}

export function endpointView(e: EndpointRecord, baseUrl: string, now: Date): Static<typeof Endpoint> {
  const self = endpointUrl(baseUrl, e.id);
  const links: Links = {
    self: { href: self, method: 'GET' },
    update: { href: self, method: 'PATCH' },
    delete: { href: self, method: 'DELETE' },
    deliveries: { href: `${self}/deliveries`, method: 'GET' },
    'rotate-secret': { href: `${self}/rotate-secret`, method: 'POST' },
    recover: { href: `${self}/recover`, method: 'POST' },
  };
  if (e.enabled) links.ping = { href: `${self}/ping`, method: 'POST' };
  const overlapEnds =
    e.sealedPreviousSecret && e.previousSecretExpiresAt && e.previousSecretExpiresAt > now
      ? e.previousSecretExpiresAt
      : null;
  return {
    Id: e.id,
    Url: e.url,
    Events: e.eventTypes,
    Description: e.description,
    Enabled: e.enabled,
    DisabledReason: e.disabledReason,
    FailingSinceUtc: iso(e.failingSince),
    PreviousSecretExpiresAtUtc: iso(overlapEnds),
    CreatedAtUtc: e.createdAt.toISOString(),
    UpdatedAtUtc: e.updatedAt.toISOString(),
    CustomerId: e.customerId,
    _links: links,
  };
}

export function deliveryView(d: DeliveryRecord, baseUrl: string): Static<typeof Delivery> {
  const self = deliveryUrl(baseUrl, d.id);
  const links: Links = {
    self: { href: self, method: 'GET' },
    endpoint: { href: endpointUrl(baseUrl, d.endpointId), method: 'GET' },
    event: { href: eventUrl(baseUrl, d.eventId), method: 'GET' },
  };
  if (d.state !== 'pending') links.redeliver = { href: `${self}/redeliver`, method: 'POST' };
  return {
    Id: d.id,
    EventId: d.eventId,
    EventType: d.eventType,
    EndpointId: d.endpointId,
    State: d.state,
    AttemptCount: d.attemptCount,
    NextAttemptAtUtc: iso(d.nextAttemptAt),
    LastStatusCode: d.lastStatusCode,
    LastError: d.lastError,
    CreatedAtUtc: d.createdAt.toISOString(),
    UpdatedAtUtc: d.updatedAt.toISOString(),
    _links: links,
  };
}

export function attemptView(a: AttemptRecord): Static<typeof Attempt> {
  return {
    Attempt: a.attempt,
    StartedAtUtc: a.startedAt.toISOString(),
    DurationMs: a.durationMs,
    StatusCode: a.statusCode,
    ErrorKind: a.errorKind,
    ErrorDetail: a.errorDetail,
    ResponseExcerpt: a.responseExcerpt,
  };
}

export function eventView(e: EventRecord, baseUrl: string): Static<typeof Event> {
  return {
    Id: e.id,
    Type: e.type,
    OccurredAtUtc: e.occurredAt.toISOString(),
    Data: JSON.parse(e.dataJson) as unknown,
    _links: { self: { href: eventUrl(baseUrl, e.id), method: 'GET' } },
  };
}
