// Mounts the webhook API (endpoints, delivery log, event list) and, unless WEBHOOK_DISPATCHER=false,
// runs the dispatcher inside this process from ready until close.
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config/config.ts';
import type { DatabaseHandle } from '../db/database.ts';
import type { OrderEventSinkAt } from '../orders/orders.events.ts';
import { endpointRoutes } from './api/endpoints.routes.ts';
import { eventRoutes } from './api/events.routes.ts';
import { portalLinkRoutes } from './api/portal-links.routes.ts';
import { orderEventSink } from './outbox/order-events.ts';
import { createWebhookRuntime, type WebhookRuntime } from './runtime.ts';

declare module 'fastify' {
  interface FastifyInstance {
    webhooks: WebhookRuntime;
  }
}

/** Returns where order changes are announced (the outbox), for the orders routes. */
export async function registerWebhooks(
  app: FastifyInstance,
  config: Readonly<Config>,
  database: DatabaseHandle,
): Promise<OrderEventSinkAt> {
  const runtime = await createWebhookRuntime(config, database, app.log, { dispatch: config.webhookDispatcher });
  app.decorate('webhooks', runtime);
  await app.register(endpointRoutes, { db: database.db, context: runtime.context });
  await app.register(eventRoutes, { db: database.db, dialect: database.dialect });
  await app.register(portalLinkRoutes, { db: database.db });
  app.addHook('onReady', async () => runtime.start());
  app.addHook('preClose', async () => runtime.stop());
  return orderEventSink(runtime.context.outbox);
}
