// PostgreSQL LISTEN on the outbox's channel: every dispatcher process hears about committed
// deliveries at once. If the connection drops it reconnects; the dispatcher's poll covers the gap.
import type { FastifyBaseLogger as BaseLogger } from 'fastify';
import { listenForNotifications, type NotificationListener } from '../../db/postgres/notification-listener.ts';
import { WAKE_CHANNEL } from '../outbox/events.outbox.ts';

export type CommitListener = NotificationListener;

export function listenForCommits(databaseUrl: string, onCommit: () => void, log: BaseLogger): CommitListener {
  return listenForNotifications(databaseUrl, WAKE_CHANNEL, onCommit, log, 'webhook commit listener');
}
