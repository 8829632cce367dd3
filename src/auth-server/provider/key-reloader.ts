// When each instance rereads its signing keys (docs/operations/scaling-out.md, "Rotating signing keys"):
// - on PostgreSQL, at once on a rotation's NOTIFY (tokens/keys.ts KEYS_CHANNEL), so a new key is published
//   everywhere within moments, long before it signs;
// - at the next instant a loaded key changes state (a pending key activates), on this instance's own timer;
// - every KEY_RELOAD_INTERVAL whatever happens (a lost notification; SQLite, where processes share a
//   file and nothing notifies), which is why KEY_ROTATION_DELAY must be longer;
// - and, asked by the resource server, when a token of our issuer names a key this instance does not hold
//   (ProviderHolder.unknownKey, rate limited).
import {
  listenForNotifications,
  type ListenerLog,
  type NotificationListener,
} from '../../db/postgres/notification-listener.ts';
import { KEYS_CHANNEL } from '../tokens/keys.ts';
import type { ProviderHolder } from './provider-holder.ts';

interface ReloaderLog extends ListenerLog {
  info(message: string): void;
}

export interface KeyReloader {
  close(): Promise<void>;
}

/** `listenUrl`: the PostgreSQL database to LISTEN on; undefined on SQLite. */
export function startKeyReloads(
  holder: ProviderHolder,
  options: { listenUrl: string | undefined; log: ReloaderLog; pollMs: number },
): KeyReloader {
  const { log } = options;
  let closed = false;
  let transition: NodeJS.Timeout | undefined;
  const reload = (): void => {
    if (closed) return;
    holder.reloadIfChanged().then(
      (changed) => changed && log.info('signing keys changed; authorization server reloaded'),
      (err: unknown) => log.warn({ err }, 'signing key reload failed'),
    );
  };
  // Each instance switches to a new key on its own clock: the key was published long enough before.
  // Never longer than the poll on one timer (the poll covers anything later anyway).
  const scheduleTransition = (): void => {
    clearTimeout(transition);
    const at = holder.keys.nextChangeAt;
    if (closed || !at) return;
    transition = setTimeout(reload, Math.min(Math.max(0, at.getTime() - Date.now()), options.pollMs));
    transition.unref();
  };
  holder.observeReloads(scheduleTransition);
  const poll = setInterval(reload, options.pollMs);
  poll.unref();
  const listener: NotificationListener | undefined =
    options.listenUrl === undefined
      ? undefined
      : listenForNotifications(options.listenUrl, KEYS_CHANNEL, reload, log, 'signing key listener');
  scheduleTransition();
  return {
    async close() {
      closed = true;
      clearInterval(poll);
      clearTimeout(transition);
      await listener?.close();
    },
  };
}
