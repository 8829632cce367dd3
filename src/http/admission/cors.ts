// CORS for the browser origins CORS_ORIGINS lists (docs/reference/configuration.md): which request headers a page may
// send and which response headers it may read. Nothing is answered when no origin is allowed.
import cors from '@fastify/cors';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../../config/config.ts';

const CORS_ALLOWED_HEADERS = [
  'Authorization',
  'Content-Type',
  'If-Match',
  'If-None-Match',
  'If-Modified-Since',
  'If-Unmodified-Since',
  'Idempotency-Key',
  'Prefer',
  'X-Request-Id',
];
const CORS_EXPOSED_HEADERS = [
  'ETag',
  'Location',
  'Link',
  'Last-Modified',
  'Retry-After',
  'RateLimit',
  'RateLimit-Policy',
  'Idempotent-Replayed',
  'X-Request-Id',
  'WWW-Authenticate',
  'Accept-Patch',
  'Preference-Applied',
];

export async function registerCors(app: FastifyInstance, config: Readonly<Config>): Promise<void> {
  if (config.corsOrigins.length === 0) return; // no browser origin allowed: nothing to answer
  await app.register(cors, {
    origin: config.corsOrigins,
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
    allowedHeaders: CORS_ALLOWED_HEADERS,
    exposedHeaders: CORS_EXPOSED_HEADERS,
    maxAge: 600,
  });
}
