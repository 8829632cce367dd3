// The HTTP side of the Prometheus metrics (docs/reference/metrics.md): one request-duration observation per
// response, and the exposition at GET /metrics: on a listener of its own (METRICS_PORT=<port> on
// METRICS_HOST, by default 9464 on loopback, as Hydra and Keycloak keep theirs off the public port), on
// the API's port (METRICS_PORT=main, only with METRICS_TOKEN or METRICS_ALLOW), or nowhere (off).
//
// The exposition holds no secret and no identifier (no label has an unbounded value), but it tells
// whoever reads it the traffic, the errors and the webhook backlog: it is not for the public
// (docs/security.md). Who may scrape is metrics-access.ts.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Histogram } from 'prom-client';
import type { Metrics } from '../../metrics/metrics.ts';
import { problemResponse } from '../representation/openapi.ts';
import { PROBLEM_CONTENT_TYPE } from '../problems/errors.ts';
import { Problem, PROBLEM_TYPES } from '../problems/problems.ts';
import type { MetricsAccess, ScrapeRefusal } from './metrics-access.ts';

declare module 'fastify' {
  interface FastifyInstance {
    /** Where the metrics listener is bound once the app is ready; undefined on the API port or off. */
    metricsAddress(): { host: string; port: number } | undefined;
  }
}

const METRICS_PATH = '/metrics';

const STATUS_CLASSES = ['1xx', '2xx', '3xx', '4xx', '5xx'];
const UNMATCHED = 'unmatched';

type Child = Histogram.Internal<'route' | 'method' | 'status_class'>;

/**
 * One observe per response, on a child looked up by a short string key: prom-client's labelled
 * `observe({...})` hashes the label object on every call, which the authenticated GET would pay
 * (docs/benchmarks.md). Keys are bounded: the app's route templates × methods × five classes.
 */
export function requestDurationObserver(metrics: Metrics): (request: FastifyRequest, reply: FastifyReply) => void {
  const children = new Map<string, Child>();
  const child = (route: string, method: string, status: number): Child => {
    const statusClass = STATUS_CLASSES[Math.floor(status / 100) - 1] ?? '5xx';
    const key = `${method} ${statusClass} ${route}`;
    let found = children.get(key);
    if (!found) {
      found = metrics.httpRequestDuration.labels(route, method, statusClass);
      children.set(key, found);
    }
    return found;
  };
  // A step of the shared onResponse hook (request-pipeline.ts).
  return (request, reply) => {
    // The template (`/api/orders/:id`), never the URL: ids would make a series per order.
    child(request.routeOptions.url ?? UNMATCHED, request.method, reply.statusCode).observe(reply.elapsedTime / 1000);
  };
}

const EXPOSITION = {
  description:
    'The Prometheus text exposition format, version 0.0.4 (`Content-Type: text/plain; version=0.0.4`): every metric docs/reference/metrics.md lists.',
  content: { 'text/plain': { schema: { type: 'string' } } },
};

/**
 * GET /metrics on the API's port (METRICS_PORT=main): documented in the OpenAPI document, exempt from the
 * rate limit (rate-limit.ts), and refused as problem+json to a scraper METRICS_TOKEN or METRICS_ALLOW
 * turns away (config.ts requires one of them here).
 */
export function registerMetricsRoute(app: FastifyInstance, metrics: Metrics, access: MetricsAccess): void {
  app.decorate('metricsAddress', () => undefined);
  app.get(
    METRICS_PATH,
    {
      schema: {
        tags: ['operations'],
        summary: 'Prometheus metrics',
        description:
          'Served here only with METRICS_PORT=main, and then only to a scraper that sends `Authorization: Bearer <METRICS_TOKEN>` or whose address METRICS_ALLOW lists (both, when both are set). By default the metrics are on a listener of their own, on loopback port 9464, and this route does not exist.',
        response: {
          200: EXPOSITION,
          400: problemResponse('Malformed request (HTTP syntax, Host).'),
          401: problemResponse('No metrics token, or a wrong one (METRICS_TOKEN).'),
          403: problemResponse('The address may not scrape (METRICS_ALLOW).'),
          500: problemResponse('A fault.'),
        },
      },
      // The client's address as TRUST_PROXY resolves it (admission/forwarded.ts), unlike request.ip.
      onRequest: async (request) => {
        const refusal = access(request.clientOrigin.ip, request.headers.authorization);
        if (refusal) throw new Problem(refusal.problem, refusal.detail, { headers: refusal.headers });
      },
    },
    async (_request, reply) => {
      const text = await metrics.render();
      return reply.header('cache-control', 'no-store').type(metrics.contentType).send(text);
    },
  );
}

export interface MetricsListenerOptions {
  host: string;
  /** 0: any free port. */
  port: number;
  access: MetricsAccess;
  /** The base of problem `type` URIs: the API's, where the problem types are documented. */
  problemBase: () => string;
}

/** Starting the metrics listener failed: the message names METRICS_PORT and the address. */
export class MetricsListenerError extends Error {
  override name = 'MetricsListenerError';
}

/**
 * METRICS_PORT=<port>: a bare node:http server on METRICS_HOST, started when the app gets ready (in
 * app.ready(), which listen() and inject() run: a port in use fails the start rather than leaving a service
 * without its metrics; onListen errors are only logged) and closed with the app. It answers GET /metrics and 404 to anything else; no rate limit.
 */
export function registerMetricsListener(app: FastifyInstance, metrics: Metrics, options: MetricsListenerOptions): void {
  let server: Server | undefined;
  let bound: { host: string; port: number } | undefined;
  app.decorate('metricsAddress', () => bound);
  app.addHook('onReady', async () => {
    const listening = createServer((req, res) => answer(app, metrics, options, req, res));
    // A scrape is one short GET: a client that takes longer to send its headers is not a scraper.
    listening.headersTimeout = 10_000;
    listening.requestTimeout = 10_000;
    await listen(listening, options.host, options.port);
    server = listening;
    bound = { host: options.host, port: (listening.address() as AddressInfo).port };
    app.log.info(bound, 'metrics listening');
  });
  app.addHook('onClose', async () => {
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server?.close(() => resolve()));
    server = undefined;
    bound = undefined;
  });
}

function listen(server: Server, host: string, port: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      const why =
        err.code === 'EADDRINUSE'
          ? 'the address is already in use (another Signet instance? give each its own METRICS_PORT)'
          : err.message;
      reject(new MetricsListenerError(`METRICS_PORT: cannot listen on ${host}:${port}: ${why}`, { cause: err }));
    });
    server.listen(port, host, () => resolve());
  });
}

function answer(
  app: FastifyInstance,
  metrics: Metrics,
  options: MetricsListenerOptions,
  req: IncomingMessage,
  res: ServerResponse,
): void {
  const path = (req.url ?? '').split('?')[0];
  if (path !== METRICS_PATH || (req.method !== 'GET' && req.method !== 'HEAD')) {
    res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found\n');
    return;
  }
  const refusal = options.access(req.socket.remoteAddress, req.headers.authorization);
  if (refusal) {
    sendRefusal(res, refusal, options.problemBase());
    return;
  }
  metrics.render().then(
    (text) => res.writeHead(200, { 'content-type': metrics.contentType, 'cache-control': 'no-store' }).end(text),
    (err: unknown) => {
      app.log.error({ err }, 'rendering the metrics failed');
      res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end('metrics unavailable\n');
    },
  );
}

/** The same problem+json members the API port sends (problems/errors.ts), without the request's own. */
function sendRefusal(res: ServerResponse, refusal: ScrapeRefusal, base: string): void {
  const type = PROBLEM_TYPES[refusal.problem];
  const body = JSON.stringify({
    type: `${base}/problems/${type.slug}`,
    title: type.title,
    status: type.status,
    detail: refusal.detail,
  });
  res
    .writeHead(type.status, {
      ...refusal.headers,
      'content-type': PROBLEM_CONTENT_TYPE,
      'cache-control': 'no-store',
    })
    .end(body);
}
