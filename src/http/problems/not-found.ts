// Unknown routes answer 404, known paths with another method 405 with `Allow` (RFC 9110 §15.5.6),
// both as problem+json. Fastify itself answers 404 for both, so every route is mirrored into a
// find-my-way router that can be asked which methods a path has.
import FindMyWay, { type HTTPMethod } from 'find-my-way';
import type { FastifyInstance } from 'fastify';
import { sendProblem } from './errors.ts';
import { clip, Problem } from './problems.ts';

const METHODS: HTTPMethod[] = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

export function registerNotFound(app: FastifyInstance): void {
  const router = FindMyWay();
  const noop = () => undefined;
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const method of methods) {
      if (route.url.includes('*') && method === 'OPTIONS') continue; // CORS preflight catch-all
      if (!router.find(method.toUpperCase() as HTTPMethod, route.url))
        router.on(method.toUpperCase() as HTTPMethod, route.url, noop);
    }
  });
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0] ?? '/';
    const allowed = METHODS.filter((m) => m !== request.method && router.find(m, path));
    if (allowed.length > 0) {
      return sendProblem(
        request,
        reply,
        new Problem(
          'methodNotAllowed',
          `${request.method} is not supported on ${clip(path)}; use ${allowed.join(', ')}`,
          { headers: { allow: allowed.join(', ') } },
        ),
      );
    }
    return sendProblem(request, reply, new Problem('notFound', `no resource at ${clip(path)}`));
  });
}
