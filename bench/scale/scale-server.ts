// Server process of the scale benchmark (bench/scale/scale.ts): real Signet apps over databases the parent has
// already migrated and filled, in a process of their own so the load generator never shares their event
// loop. Speaks bench/lib/child-control.ts's messages (CPU time per measured window, CPU profiles).
//
// Environment:
//   BENCH_JWKS_FILE     local JWKS the apps trust
//   BENCH_SCALE_APPS    JSON [{ "name": "sqlite-large", "url": "sqlite:/…" | "postgres://…" }]
// The parent drops the databases: this process only closes its apps.
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config/config.ts';
import { closeAppsAndDrop, sendToParent, serveChildControl, type ControlReply } from '../lib/child-control.ts';
import { benchServerEnv } from '../api/tokens.ts';

export interface ScaleApp {
  name: string;
  url: string;
}

export type ScaleServerMessage = ControlReply | { type: 'ready'; ports: Record<string, number> };

const jwksFile = process.env.BENCH_JWKS_FILE;
const specs: ScaleApp[] = JSON.parse(process.env.BENCH_SCALE_APPS ?? '[]');
let requestCount = 0;
const apps: FastifyInstance[] = [];
const shutdown = closeAppsAndDrop(apps, []);
serveChildControl({ requestCount: () => requestCount, shutdown });

try {
  if (!jwksFile) throw new Error('BENCH_JWKS_FILE is required');
  const ports: Record<string, number> = {};
  for (const spec of specs) {
    const app = await buildApp(loadConfig(benchServerEnv(spec.url, jwksFile)));
    apps.push(app);
    await app.listen({ host: '127.0.0.1', port: 0 });
    app.server.on('request', () => requestCount++);
    ports[spec.name] = (app.server.address() as { port: number }).port;
  }
  sendToParent({ type: 'ready', ports } satisfies ScaleServerMessage);
} catch (err) {
  sendToParent({ type: 'error', message: (err as Error).stack ?? String(err) });
  await shutdown(1);
}
