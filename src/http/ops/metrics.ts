// The HTTP side of the Prometheus metrics (docs/reference/metrics.md): one request-duration observation per
// response, and the exposition at GET /metrics: on the API's port (METRICS_PORT=main, the default),
// on a listener of its own (METRICS_PORT=<port>, same HOST), or nowhere (METRICS_PORT=off).
//
// On the API's port /metrics is public, like /healthz: a Prometheus scrape job carries no OAuth token,
// and the exposition holds no secret and no identifier (no label has an unbounded value). Deployments
// that do not want it reachable from outside move it to its own port (not forwarded by the proxy) or
// turn it off.
import { createServer, type Server } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Histogram } from 'prom-client';
import type { Metrics } from '../../metrics/metrics.ts';
import { problemResponse } from '../representation/openapi.ts';

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

/** GET /metrics on the API's port: documented in the OpenAPI document, exempt from the rate limit (rate-limit.ts). */
export function registerMetricsRoute(app: FastifyInstance, metrics: Metrics): void {
  app.get(
    METRICS_PATH,
    {
      schema: {
        tags: ['operations'],
        summary: 'Prometheus metrics',
        description:
          'Public like /healthz; served here unless METRICS_PORT moves it to a listener of its own or turns it off.',
        response: {
          200: EXPOSITION,
          400: problemResponse('Malformed request (HTTP syntax, Host).'),
          500: problemResponse('A fault.'),
        },
      },
    },
    async (_request, reply) => {
      const text = await metrics.render();
      return reply.header('cache-control', 'no-store').type(metrics.contentType).send(text);
    },
  );
}

/**
 * METRICS_PORT=<port>: a bare node:http server on the same host, started when the app listens and
 * closed with it. It answers GET /metrics and 404 to anything else; no token, no rate limit.
 */
export function registerMetricsListener(app: FastifyInstance, metrics: Metrics, host: string, port: number): void {
  let server: Server | undefined;
  app.addHook('onListen', async () => {
    const listening = createServer((req, res) => {
      const path = (req.url ?? '').split('?')[0];
      if (path !== METRICS_PATH || (req.method !== 'GET' && req.method !== 'HEAD')) {
        res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found\n');
        return;
      }
      metrics.render().then(
        (text) => res.writeHead(200, { 'content-type': metrics.contentType, 'cache-control': 'no-store' }).end(text),
        (err: unknown) => {
          app.log.error({ err }, 'rendering the metrics failed');
          res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end('metrics unavailable\n');
        },
      );
    });
    await new Promise<void>((resolve, reject) => {
      listening.once('error', reject);
      listening.listen(port, host, () => resolve());
    });
    server = listening;
    app.log.info({ host, port }, 'metrics listening');
  });
  app.addHook('onClose', async () => {
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server?.close(() => resolve()));
  });
}
