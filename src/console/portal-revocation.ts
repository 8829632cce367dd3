// Ending a client's portals (docs/guides/portal.md, "Ending portals"): when the client's secret is rotated or the
// client is deleted, every portal session of the client ends and every link not yet used stops working. Rotating
// a secret answers a suspected leak, and a portal acts with the client's rights: it must not outlive that. Called
// by the console when the admin API answers such a change (plugin.ts) and by the CLI after its own.
import type { Db } from '../db/executor.ts';
import { revokeLinksOfClient } from '../webhooks/api/portal-links.service.ts';
import { deletePortalSessionsOfClient } from './portal-sessions.repository.ts';

export async function endPortalsOfClient(db: Db, clientId: string, now: Date): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await revokeLinksOfClient(trx, clientId, now);
    await deletePortalSessionsOfClient(trx, clientId);
  });
}
