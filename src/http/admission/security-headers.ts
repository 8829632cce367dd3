// Security response headers. The policy comes from `helmet`, but it is evaluated once at start and the
// resulting header set is applied by one synchronous step of the shared onRequest hook (request-pipeline.ts):
// @fastify/helmet rebuilds helmet's middleware on every request (measured ~10 µs and ~14 KB of garbage per request, docs/benchmarks.md).
// JSON responses get a locked-down CSP; the HTML reference page under /docs gets one that lets it load
// its own (local) scripts and styles.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import helmet, { type HelmetOptions } from 'helmet';

type HeaderSet = Record<string, string>;

/** Runs helmet's middleware once against a recording response and returns the headers it set. */
function headersFrom(options: HelmetOptions): HeaderSet {
  const headers: HeaderSet = {};
  const recorder = {
    setHeader: (name: string, value: string | number) => {
      headers[name.toLowerCase()] = String(value);
    },
    removeHeader: (name: string) => {
      delete headers[name.toLowerCase()];
    },
  };
  helmet(options)({} as IncomingMessage, recorder as unknown as ServerResponse, () => undefined);
  return headers;
}

function policies(https: boolean): { api: HeaderSet; docs: HeaderSet } {
  const common: HelmetOptions = {
    strictTransportSecurity: https ? { maxAge: 31536000 } : false,
    xFrameOptions: { action: 'deny' },
  };
  const api = headersFrom({
    ...common,
    contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } },
  });
  const docs = headersFrom({
    ...common,
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        defaultSrc: ["'self'"],
        imgSrc: ["'self'", 'data:'],
        styleSrc: ["'self'", "'unsafe-inline'"],
        scriptSrc: ["'self'"],
        frameAncestors: ["'none'"],
        baseUri: ["'none'"],
        formAction: ["'self'"],
        objectSrc: ["'none'"],
      },
    },
  });
  return { api, docs };
}

/** A step of the shared onRequest hook (request-pipeline.ts): the precomputed set for the request's path. */
export function securityHeaders(options: { https: boolean }): (request: FastifyRequest, reply: FastifyReply) => void {
  const { api, docs } = policies(options.https);
  return (request, reply) => {
    reply.headers(request.url.startsWith('/docs') ? docs : api);
  };
}
