// One shape for every list: `{ Items, _links }`, where `_links.self` is the request as made and
// `_links.next`, present only when another page follows, is the same request with the cursor set. The
// next page is also announced in a `Link` header (RFC 8288), for clients that follow links generically.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { encodeCursor, type CursorPayload } from './cursor.ts';

interface PageLink {
  href: string;
  method: string;
}

interface ListResponse<T> {
  Items: T[];
  _links: Record<string, PageLink>;
}

interface NextPage {
  /** The query parameter that carries the cursor (`cursor`, `after`). */
  parameter: string;
  /** Where the next page starts: encoded here, or already encoded when a string. */
  cursor: CursorPayload | string;
  /** Query parameters the cursor stands for, removed from the next link. */
  drop?: readonly string[];
}

/**
 * The page of `items` for this request, whose URLs start at `baseUrl` (publicBaseUrl). With `next`,
 * adds `_links.next` and sets the `Link: <…>; rel="next"` header on `reply`.
 */
export function listPage<T>(
  request: FastifyRequest,
  reply: FastifyReply,
  baseUrl: string,
  items: T[],
  next?: NextPage,
): ListResponse<T> {
  const self = `${baseUrl}${request.url}`;
  const links: Record<string, PageLink> = { self: { href: self, method: 'GET' } };
  if (next) {
    const url = new URL(self);
    url.searchParams.set(next.parameter, typeof next.cursor === 'string' ? next.cursor : encodeCursor(next.cursor));
    for (const name of next.drop ?? []) url.searchParams.delete(name);
    const href = url.toString();
    links.next = { href, method: 'GET' };
    reply.header('link', `<${href}>; rel="next"`);
  }
  return { Items: items, _links: links };
}
