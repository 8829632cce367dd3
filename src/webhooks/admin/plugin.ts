// The webhooks' part of the admin API (/api/admin/webhook-endpoints, webhook-stats, webhook-deliveries,
// events): every client's endpoints, deliveries and events for operators, and the operator endpoints. Composed with the other
// features' admin routes by src/operator/plugin.ts.
import type { FastifyInstance } from 'fastify';
import type { Db } from '../../db/executor.ts';
import type { EndpointContext } from '../api/endpoints.service.ts';
import { deliveryAdminRoutes } from './deliveries.routes.ts';
import { eventAdminRoutes } from './events.routes.ts';
import { webhookAdminRoutes } from './webhooks.routes.ts';
import { operatorEndpointRoutes } from './operator-endpoints.routes.ts';

export async function webhooksAdminRoutes(
  app: FastifyInstance,
  options: { db: Db; context: EndpointContext },
): Promise<void> {
  const { db, context } = options;
  await app.register(webhookAdminRoutes, { db });
  // The endpoints of the audit stream (docs/security.md, "Streaming the audit trail").
  await app.register(operatorEndpointRoutes, { db, context });
  // The outbox wakes the dispatchers after a redeliver or recover.
  await app.register(deliveryAdminRoutes, { db, outbox: context.outbox });
  await app.register(eventAdminRoutes, { db, outbox: context.outbox });
}
