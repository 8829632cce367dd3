// How an order looks on the wire: PascalCase members (docs/guides/calling-the-api.md, "Orders"), HAL-style `_links`
// (href + method, absolute URLs) for exactly the actions its state allows, optional `_embedded` related data,
// sparse `fields`, and the validators (ETag, Last-Modified) of each variant.
import { createHash } from 'node:crypto';
import { Problem } from '../http/problems/problems.ts';
import { fromMinorUnits } from './orders.money.ts';
import type { OrderRecord, StatusChangeRecord } from './orders.repository.ts';
import { actionsFrom, isDeletable, isEditable, isTrackable } from './orders.states.ts';

const ORDER_MEMBERS = [
  'Id',
  'CustomerId',
  'Total',
  'Currency',
  'Status',
  'CreatedAtUtc',
  'UpdatedAtUtc',
  '_links',
] as const;
const ORDER_INCLUDES = ['history'] as const;
type OrderInclude = (typeof ORDER_INCLUDES)[number];

export interface Variant {
  fields: string[] | undefined;
  include: OrderInclude[];
}

interface Link {
  href: string;
  method: string;
}

export function orderUrl(baseUrl: string, id: number): string {
  return `${baseUrl}/api/orders/${id}`;
}

function orderLinks(order: OrderRecord, baseUrl: string): Record<string, Link> {
  const self = orderUrl(baseUrl, order.id);
  const links: Record<string, Link> = { self: { href: self, method: 'GET' } };
  for (const action of actionsFrom(order.status)) links[action] = { href: `${self}/${action}`, method: 'POST' };
  if (isEditable(order.status)) links.update = { href: self, method: 'PUT' };
  if (isDeletable(order.status)) links.delete = { href: self, method: 'DELETE' };
  if (isTrackable(order.status)) links.track = { href: `${self}?include=history`, method: 'GET' };
  return links;
}

/** The order's members without `_links`: the document a PATCH applies to (orders.patch-handler.ts). */
export function orderMembers(order: OrderRecord): Record<string, unknown> {
  return {
    Id: order.id,
    CustomerId: order.customerId,
    Total: fromMinorUnits(order.totalMinor, order.currency),
    Currency: order.currency,
    Status: order.status,
    CreatedAtUtc: order.createdAt.toISOString(),
    UpdatedAtUtc: order.updatedAt.toISOString(),
  };
}

export function toRepresentation(
  order: OrderRecord,
  baseUrl: string,
  variant: Variant,
  history?: StatusChangeRecord[],
): Record<string, unknown> {
  const full = orderMembers(order);
  full._links = orderLinks(order, baseUrl);
  const body = variant.fields ? pick(full, variant.fields) : full;
  if (history) body._embedded = { history: history.map((h) => ({ Status: h.status, AtUtc: h.at.toISOString() })) };
  return body;
}

function pick(source: Record<string, unknown>, names: string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const name of names) out[name] = source[name];
  return out;
}

/** Parses `fields` and `include`; unknown names are a 400 that lists what is allowed. */
export function parseVariant(fields: string | undefined, include: string | undefined): Variant {
  return {
    fields: fields === undefined ? undefined : namesFrom('fields', fields, ORDER_MEMBERS),
    include: include === undefined ? [] : (namesFrom('include', include, ORDER_INCLUDES) as OrderInclude[]),
  };
}

function namesFrom(parameter: string, value: string, allowed: readonly string[]): string[] {
  const names = [
    ...new Set(
      value
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    ),
  ];
  const unknown = names.filter((n) => !allowed.includes(n));
  if (names.length === 0 || unknown.length > 0) {
    throw new Problem(
      'invalidParameter',
      `${parameter}: unknown member(s) ${unknown.map((u) => JSON.stringify(u)).join(', ') || '(none given)'}; allowed: ${allowed.join(', ')}`,
      {
        errors: [{ pointer: `/${parameter}`, detail: `allowed: ${allowed.join(', ')}` }],
      },
    );
  }
  return names;
}

const variantTags = new Map<string, string>();

/**
 * Strong ETag `"<id>.<version>.<variant>"`: the version changes with every write, the variant part with
 * the selected members, embedded data and the base URL the links are built on (RFC 9110 §8.8.3).
 */
export function entityTag(order: OrderRecord, baseUrl: string, variant: Variant): string {
  const key = `${baseUrl}|${variant.fields?.join(',') ?? '*'}|${variant.include.join(',')}`;
  let tag = variantTags.get(key);
  if (tag === undefined) {
    tag = createHash('sha256').update(key).digest('base64url').slice(0, 10);
    if (variantTags.size > 1000) variantTags.clear();
    variantTags.set(key, tag);
  }
  return `"${order.id}.${order.version}.${tag}"`;
}

/** If-Match accepts a tag of any variant of the current version: all describe the same state. */
export function tagMatchesVersion(tag: string, order: OrderRecord): boolean {
  return tag.startsWith(`"${order.id}.${order.version}.`);
}
