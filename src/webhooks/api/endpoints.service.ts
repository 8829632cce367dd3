// Endpoint rules: ownership (an endpoint belongs to the client that registered it and is invisible to
// others), callback URL and event-type validation, secrets (generated or chosen, rotated with an
// overlap), enabling and disabling. Knows nothing of HTTP.
import { sql } from 'kysely';
import { recordAudit, type AuditEntry } from '../../audit/audit.ts';
import type { Db, Dialect, Executor } from '../../db/executor.ts';
import { Problem, type FieldError } from '../../http/problems/problems.ts';
import { validationProblem } from '../../http/problems/validation.ts';
import { WEBHOOK_PROBLEMS } from './webhooks.errors.ts';
import * as deliveries from '../store/deliveries.repository.ts';
import * as repo from '../store/endpoints.repository.ts';
import type { EndpointRecord } from '../store/endpoints.repository.ts';
import {
  ALL_EVENTS,
  isEventType,
  isOperatorEventType,
  newId,
  OPERATOR_EVENT_TYPES,
  OPERATOR_OWNER,
} from '../outbox/events.catalogue.ts';
import { EVENT_DATA } from '../outbox/events.examples.ts';
import type { Outbox, RecordedEvent } from '../outbox/events.outbox.ts';
import { startAuditStream } from '../outbox/audit-relay.ts';
import { callbackUrl, callbackUrlProblem, type UrlRules } from '../delivery/address-policy.ts';
import { generateSecret, secretProblem, type SecretBox } from '../store/secrets.ts';

/** Stripe allows 16 endpoints per account; a client that needs more than this is doing something else. */
export const MAX_ENDPOINTS_PER_OWNER = 50;
/**
 * Each of a client's customers has a quota of its own, apart from the client's (docs/guides/portal.md, "Customer
 * portals"): one customer filling a shared quota would lock every other customer, and the client, out.
 */
export const MAX_ENDPOINTS_PER_CUSTOMER = 10;
const MAX_URL_LENGTH = 2048;

export interface EndpointContext {
  dialect: Dialect;
  box: SecretBox;
  outbox: Outbox;
  urlRules: UrlRules;
  secretOverlapMs: number;
}

/**
 * Whose endpoints a caller sees: a client's (all of them, its customers' included), or only those of one of its
 * customers (a customer-scoped portal, docs/guides/portal.md). Anything outside is answered 404, as if absent.
 */
export interface EndpointOwner {
  clientId: string;
  customerId?: string;
}

/** The portal session (and the link that opened it) a change came through: named in the audit entry. */
export interface PortalOrigin {
  sessionId: string;
  linkId?: string;
  customerId?: string;
}

/**
 * Who made the change, for the audit trail (docs/security.md, "The audit trail"): the owning client, or an admin;
 * through a portal session, which the entry names.
 */
export type ChangedBy = Pick<AuditEntry, 'actor' | 'requestId' | 'sourceAddress'> & { portal?: PortalOrigin };

/** The audit details that name the portal session, its link and its customer (none outside a portal). */
export function portalDetails(portal: PortalOrigin | undefined): Record<string, string> {
  if (!portal) return {};
  return {
    portal_session_id: portal.sessionId,
    ...(portal.linkId && { portal_link_id: portal.linkId }),
    ...(portal.customerId && { customer_id: portal.customerId }),
  };
}

/** The audit entry of a change to an endpoint, on the executor of the change (same transaction). */
export function recordEndpointAudit(
  executor: Executor,
  by: ChangedBy,
  action: AuditEntry['action'],
  endpoint: EndpointRecord,
  details: AuditEntry['details'] = {},
): Promise<void> {
  const { portal, ...who } = by;
  return recordAudit(executor, {
    ...who,
    action,
    target: { type: 'webhook_endpoint', id: endpoint.id },
    details: {
      client_id: endpoint.owner,
      ...(endpoint.customerId !== null && { customer_id: endpoint.customerId }),
      ...details,
      ...portalDetails(portal),
    },
  });
}

interface EndpointInput {
  Url: string;
  Events: string[];
  Description?: string;
  Secret?: string;
}

/** The URL to store (the parser's serialisation, which is what gets called), or undefined after pushing the problem. */
function checkUrl(raw: string, rules: UrlRules, errors: FieldError[]): string | undefined {
  const problem = callbackUrlProblem(raw, rules);
  if (problem) return void errors.push({ pointer: '/Url', detail: problem });
  const url = callbackUrl(raw);
  // Measured as stored: percent-encoding can lengthen what was sent.
  if (url.length > MAX_URL_LENGTH)
    return void errors.push({ pointer: '/Url', detail: `must be at most ${MAX_URL_LENGTH} characters` });
  return url;
}

/** Control characters have no place in a label, and PostgreSQL refuses U+0000 in text outright (a 500 otherwise). */
function checkDescription(description: string | null | undefined, errors: FieldError[]): void {
  if (description && /\p{Cc}/u.test(description))
    errors.push({ pointer: '/Description', detail: 'must not contain control characters' });
}

/**
 * A client's endpoint: `*` alone, or known types of the clients' catalogue without repeats. An operator endpoint
 * (OPERATOR_OWNER): operator event types only, which a client's endpoint can never subscribe to.
 */
function checkEvents(events: string[], owner: EndpointOwner, errors: FieldError[]): string[] {
  const unique = [...new Set(events)];
  const operator = owner.clientId === OPERATOR_OWNER;
  if (!operator && unique.includes(ALL_EVENTS) && unique.length > 1)
    errors.push({ pointer: '/Events', detail: '"*" already means every type; send it alone' });
  // Pointers index the array as sent (repeats included), so the first place of each refused type.
  unique.forEach((type) => {
    const detail = operator ? operatorTypeProblem(type) : clientTypeProblem(type);
    if (detail) errors.push({ pointer: `/Events/${events.indexOf(type)}`, detail });
  });
  return unique;
}

function clientTypeProblem(type: string): string | undefined {
  if (type === ALL_EVENTS || isEventType(type)) return undefined;
  if (isOperatorEventType(type))
    return `"${type}" goes only to endpoints an admin registers (POST /api/admin/webhook-endpoints)`;
  return `unknown event type "${type}"`;
}

function operatorTypeProblem(type: string): string | undefined {
  if (isOperatorEventType(type)) return undefined;
  return `an admin's endpoint receives operator events only (${OPERATOR_EVENT_TYPES.map((t) => `"${t}"`).join(', ')}); "${type}" goes to clients' endpoints`;
}

async function createEndpoint(
  db: Db,
  ctx: EndpointContext,
  owner: EndpointOwner,
  input: EndpointInput,
  now: Date,
  by: ChangedBy,
): Promise<{ endpoint: EndpointRecord; secret: string }> {
  const errors: FieldError[] = [];
  const url = checkUrl(input.Url, ctx.urlRules, errors);
  const eventTypes = checkEvents(input.Events, owner, errors);
  checkDescription(input.Description, errors);
  const secretIssue = input.Secret === undefined ? undefined : secretProblem(input.Secret);
  if (secretIssue) errors.push({ pointer: '/Secret', detail: secretIssue });
  if (errors.length > 0 || url === undefined) throw validationProblem(errors);
  const id = newId('whep');
  const secret = input.Secret ?? generateSecret();
  // Insert, then count with the new row, in one transaction that one owner's registrations take in
  // turn: counting first outside of that, concurrent requests all counted 49 and all inserted. A customer's
  // endpoints count against the customer's quota, the client's own against the client's.
  const customerId = owner.customerId ?? null;
  const max = customerId === null ? MAX_ENDPOINTS_PER_OWNER : MAX_ENDPOINTS_PER_CUSTOMER;
  const endpoint = await db.transaction().execute(async (trx) => {
    await takeOwnersTurn(trx, ctx.dialect, customerId === null ? owner.clientId : `${owner.clientId}\n${customerId}`);
    const inserted = await repo.insertEndpoint(trx, {
      id,
      owner: owner.clientId,
      customerId,
      url,
      description: input.Description ?? '',
      eventTypes,
      sealedSecret: ctx.box.seal(id, secret),
      now,
    });
    if ((await repo.countEndpoints(trx, owner.clientId, customerId)) > max) {
      const who = customerId === null ? 'a client' : 'a customer';
      throw new Problem(
        WEBHOOK_PROBLEMS.limitReached,
        `${who} may register at most ${max} endpoints; delete one first`,
      );
    }
    if (owner.clientId === OPERATOR_OWNER) await startAuditStream(trx, inserted.id);
    await recordEndpointAudit(trx, by, 'webhook_endpoint.created', inserted, {
      url: inserted.url,
      events: inserted.eventTypes,
    });
    return inserted;
  });
  return { endpoint, secret };
}

/** The key space of this lock (pg_advisory_xact_lock's first key), so it meets no other advisory lock. */
const ENDPOINT_LIMIT_LOCK = 0x77686570; // "whep"

/**
 * PostgreSQL (READ COMMITTED) lets concurrent transactions miss each other's new rows, so they queue on a
 * per-owner advisory lock until commit. SQLite needs nothing: the INSERT, the transaction's first
 * statement, takes the database's single write lock before the count reads, even across processes.
 */
async function takeOwnersTurn(trx: Executor, dialect: Dialect, owner: string): Promise<void> {
  if (dialect === 'postgres')
    await sql`select pg_advisory_xact_lock(${ENDPOINT_LIMIT_LOCK}, hashtext(${owner}))`.execute(trx);
}

/** Whether `owner` sees this endpoint: its client's, and (for a customer) that customer's. */
export function ownsEndpoint(owner: EndpointOwner, endpoint: EndpointRecord): boolean {
  if (endpoint.owner !== owner.clientId) return false;
  return owner.customerId === undefined || endpoint.customerId === owner.customerId;
}

/** Another client's (or another customer's) endpoint answers 404: its existence is not revealed. */
export async function getOwnedEndpoint(db: Executor, owner: EndpointOwner, id: string): Promise<EndpointRecord> {
  const endpoint = await repo.findEndpoint(db, id);
  if (!endpoint || !ownsEndpoint(owner, endpoint))
    throw new Problem('notFound', `webhook endpoint ${id} does not exist`);
  return endpoint;
}

interface EndpointPatch {
  Url?: string;
  Events?: string[];
  Description?: string | null;
  Enabled?: boolean;
}

async function changeEndpoint(
  db: Executor,
  ctx: EndpointContext,
  owner: EndpointOwner,
  id: string,
  patch: EndpointPatch,
  now: Date,
  by: ChangedBy,
): Promise<EndpointRecord> {
  const endpoint = await getOwnedEndpoint(db, owner, id);
  const errors: FieldError[] = [];
  const url = patch.Url === undefined ? undefined : checkUrl(patch.Url, ctx.urlRules, errors);
  const eventTypes = patch.Events === undefined ? undefined : checkEvents(patch.Events, owner, errors);
  checkDescription(patch.Description, errors);
  if (errors.length > 0) throw validationProblem(errors);
  const changes: repo.EndpointChanges = {
    url,
    eventTypes,
    description: patch.Description === null ? '' : patch.Description,
  };
  if (patch.Enabled === true && !endpoint.enabled)
    Object.assign(changes, { enabled: true, disabledReason: null, failingSince: null });
  if (patch.Enabled === false && endpoint.enabled) {
    Object.assign(changes, { enabled: false, disabledReason: 'manual' });
    await deliveries.failPending(db, id, 'endpoint disabled', now);
  }
  const updated = (await repo.updateEndpoint(db, id, changes, now))!;
  const changed = (['Url', 'Events', 'Description'] as const).filter((member) => patch[member] !== undefined);
  if (changed.length > 0)
    await recordEndpointAudit(db, by, 'webhook_endpoint.updated', updated, { changed, url: updated.url });
  if (updated.enabled !== endpoint.enabled)
    await recordEndpointAudit(
      db,
      by,
      updated.enabled ? 'webhook_endpoint.enabled' : 'webhook_endpoint.disabled',
      updated,
      {
        reason: updated.disabledReason,
      },
    );
  return updated;
}

async function removeEndpoint(db: Executor, owner: EndpointOwner, id: string, by: ChangedBy): Promise<void> {
  const endpoint = await getOwnedEndpoint(db, owner, id);
  await repo.deleteEndpoint(db, id);
  await recordEndpointAudit(db, by, 'webhook_endpoint.deleted', endpoint, { url: endpoint.url });
}

/**
 * The new secret signs at once; the previous one keeps signing (one more `v1,` signature in
 * webhook-signature) until the overlap ends, so receivers can switch without a failed verification.
 */
async function rotateSecret(
  db: Executor,
  ctx: EndpointContext,
  owner: EndpointOwner,
  id: string,
  chosen: string | undefined,
  now: Date,
  by: ChangedBy,
): Promise<{ secret: string; previousExpiresAt: Date }> {
  const endpoint = await getOwnedEndpoint(db, owner, id);
  const issue = chosen === undefined ? undefined : secretProblem(chosen);
  if (issue) throw validationProblem([{ pointer: '/Secret', detail: issue }]);
  // One previous secret at a time: a second rotation during the overlap would silently end the first
  // one's (consumers still on the oldest secret would fail), so it waits for the overlap to run out.
  const overlapEnds = endpoint.previousSecretExpiresAt;
  if (overlapEnds && overlapEnds > now) throw overlapRunning(id, overlapEnds);
  const secret = chosen ?? generateSecret();
  const previousExpiresAt = new Date(now.getTime() + ctx.secretOverlapMs);
  const rotated = await repo.rotateSecret(
    db,
    id,
    { sealedSecret: ctx.box.seal(id, secret), sealedCurrent: endpoint.sealedSecret, previousExpiresAt },
    now,
  );
  if (!rotated) throw overlapRunning(id, previousExpiresAt); // a concurrent rotation won
  await recordEndpointAudit(db, by, 'webhook_endpoint.secret_rotated', endpoint, {
    previous_secret_expires_at: previousExpiresAt.toISOString(),
  });
  return { secret, previousExpiresAt };
}

function overlapRunning(id: string, until: Date): Problem {
  return new Problem(
    WEBHOOK_PROBLEMS.webhookState,
    `webhook endpoint ${id} is in a secret rotation's overlap until ${until.toISOString()}: both secrets sign until then; rotate again after it`,
  );
}

async function ping(
  db: Executor,
  ctx: EndpointContext,
  owner: EndpointOwner,
  id: string,
  now: Date,
): Promise<RecordedEvent> {
  const endpoint = await getOwnedEndpoint(db, owner, id);
  if (!endpoint.enabled) throw disabledProblem(id);
  return ctx.outbox.record(db, {
    type: 'webhook.ping',
    data: { EndpointId: id, Url: endpoint.url },
    occurredAt: now,
    owner: owner.clientId,
    customerId: endpoint.customerId ?? undefined,
    endpointIds: [id],
  });
}

/**
 * A test event (docs/reference/events.md, "Test events"): one delivery of `type` to this endpoint only, whatever it
 * subscribes to (like a ping: the point is to see a type before subscribing to it), whose Data is the catalogue's
 * example (events.examples.ts, the OpenAPI `webhooks` section). Owned by the client, so no other client's feed shows
 * it.
 */
async function sendTestEvent(
  db: Executor,
  ctx: EndpointContext,
  owner: EndpointOwner,
  id: string,
  type: string,
  now: Date,
): Promise<RecordedEvent> {
  const endpoint = await getOwnedEndpoint(db, owner, id);
  if (!isEventType(type))
    throw validationProblem([{ pointer: '/Type', detail: `unknown event type "${type}": see the event catalogue` }]);
  if (!endpoint.enabled) throw disabledProblem(id);
  return ctx.outbox.record(db, {
    type,
    data: EVENT_DATA[type].example,
    occurredAt: now,
    owner: owner.clientId,
    customerId: endpoint.customerId ?? undefined,
    endpointIds: [id],
  });
}

function disabledProblem(id: string): Problem {
  return new Problem(
    WEBHOOK_PROBLEMS.webhookState,
    `webhook endpoint ${id} is disabled; enable it with PATCH {"Enabled": true} first`,
  );
}

/** The endpoint rules bound once to the database and the webhook context; `now` stamps the request. */
export function createEndpointsService({ db, context }: { db: Db; context: EndpointContext }) {
  return {
    list: (owner: EndpointOwner) => repo.listEndpoints(db, owner.clientId, owner.customerId),
    get: (owner: EndpointOwner, id: string) => getOwnedEndpoint(db, owner, id),
    create: (owner: EndpointOwner, input: EndpointInput, now: Date, by: ChangedBy) =>
      createEndpoint(db, context, owner, input, now, by),
    change: (owner: EndpointOwner, id: string, patch: EndpointPatch, now: Date, by: ChangedBy) =>
      db.transaction().execute((trx) => changeEndpoint(trx, context, owner, id, patch, now, by)),
    remove: (owner: EndpointOwner, id: string, by: ChangedBy) =>
      db.transaction().execute((trx) => removeEndpoint(trx, owner, id, by)),
    rotateSecret: (owner: EndpointOwner, id: string, chosen: string | undefined, now: Date, by: ChangedBy) =>
      db.transaction().execute((trx) => rotateSecret(trx, context, owner, id, chosen, now, by)),
    ping: (owner: EndpointOwner, id: string, now: Date) =>
      db.transaction().execute((trx) => ping(trx, context, owner, id, now)),
    sendTestEvent: (owner: EndpointOwner, id: string, type: string, now: Date) =>
      db.transaction().execute((trx) => sendTestEvent(trx, context, owner, id, type, now)),
  };
}
