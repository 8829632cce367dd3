// The webhooks' part of the admin API (/api/admin/webhook-endpoints, webhook-stats, webhook-deliveries,
// events): every client's endpoints, deliveries and events for operators. Composed with the other
// features' admin routes by src/operator/plugin.ts.
import type { FastifyInstance } from 'fastify';
import type { Db } from '../../db/executor.ts';
import type { Outbox } from '../outbox/events.outbox.ts';
import { deliveryAdminRoutes } from './deliveries.routes.ts';
import { eventAdminRoutes } from './events.routes.ts';
import { webhookAdminRoutes } from './webhooks.routes.ts';

export async function webhooksAdminRoutes(app: FastifyInstance, options: { db: Db; outbox: Outbox }): Promise<void> {
  await app.register(webhookAdminRoutes, { db: options.db });
  // The outbox wakes the dispatchers after a redeliver or recover.
  await app.register(deliveryAdminRoutes, options);
  await app.register(eventAdminRoutes, options);
}
