// `signet receiver dead` and `signet receiver requeue`: the operator's side of the inbox's dead letters.
// An entry is dead once the consumer's handler failed on every attempt; after fixing the handler, the
// operator requeues it and the running receiver's worker picks it up at its next poll.
import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { DEFAULT_DATABASE, openInbox, type InboxEntry } from '../receiver/index.ts';
import { UsageError } from './admin.ts';

export const DEAD_LETTER_USAGE = `usage:
  signet receiver dead [--database sqlite:./signet-receiver.db|postgres://…] [--source <name>] [--json]
    Lists the entries whose handler failed on every attempt, oldest first, with the last error.
  signet receiver requeue [--database …] (--seq <n>... | --source <name> | --all)
    Gives those entries a fresh set of attempts, due now; a running receiver picks them up at its next poll.`;

const DATABASE_URL = /^(?:sqlite:.+|postgres(?:ql)?:\/\/.+)$/;

/** --database, checked the same way for the receiver and for these tools. */
export function inboxDatabaseOption(value: string | undefined): string {
  const database = value ?? DEFAULT_DATABASE;
  if (!DATABASE_URL.test(database))
    throw new UsageError(
      `--database must be sqlite:<file> or postgres://user@host:port/db (got ${JSON.stringify(database)})`,
    );
  return database;
}

interface DeadLetterArguments {
  action: 'dead' | 'requeue';
  database: string;
  source: string | undefined;
  seqs: number[] | undefined;
  json: boolean;
}

function parseDeadLetterArgs(action: 'dead' | 'requeue', args: string[]): DeadLetterArguments {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      database: { type: 'string' },
      source: { type: 'string' },
      seq: { type: 'string', multiple: true },
      all: { type: 'boolean' },
      json: { type: 'boolean' },
    },
  });
  if (positionals.length > 0)
    throw new UsageError(`unexpected argument ${JSON.stringify(positionals[0])}\n\n${DEAD_LETTER_USAGE}`);
  if (values.source !== undefined && !values.source.trim()) throw new UsageError('--source must not be empty');
  const seqs = values.seq?.map((seq) => {
    if (!/^[1-9]\d{0,15}$/.test(seq))
      throw new UsageError(
        `--seq must be an entry number as \`signet receiver dead\` shows it (got ${JSON.stringify(seq)})`,
      );
    return Number(seq);
  });
  if (action === 'dead' && (seqs !== undefined || values.all))
    throw new UsageError(`--seq and --all only apply to requeue\n\n${DEAD_LETTER_USAGE}`);
  if (action === 'requeue') {
    // Requeueing every dead entry at once is a deliberate act: it has to be asked for.
    if (values.all && (seqs !== undefined || values.source !== undefined))
      throw new UsageError('--all requeues every dead entry: leave out --seq and --source, or leave out --all');
    if (!values.all && seqs === undefined && values.source === undefined)
      throw new UsageError(`requeue needs --seq <n>, --source <name> or --all\n\n${DEAD_LETTER_USAGE}`);
  }
  if (action === 'requeue' && values.json) throw new UsageError('--json only applies to dead');
  return {
    action,
    database: inboxDatabaseOption(values.database),
    source: values.source,
    seqs,
    json: values.json ?? false,
  };
}

export async function deadLetterCommand(action: 'dead' | 'requeue', args: string[]): Promise<number> {
  if (args.includes('--help') || args.includes('-h')) {
    console.log(DEAD_LETTER_USAGE);
    return 0;
  }
  const parsed = parseDeadLetterArgs(action, args);
  // Opening an inbox creates it; a mistyped file name should say so rather than list nothing.
  if (parsed.database.startsWith('sqlite:') && !existsSync(parsed.database.slice('sqlite:'.length))) {
    throw new UsageError(`no inbox at ${parsed.database.slice('sqlite:'.length)}: pass the receiver's --database`);
  }
  const inbox = await openInbox(parsed.database);
  try {
    if (action === 'requeue') {
      const count = await inbox.requeueDead({ source: parsed.source, seqs: parsed.seqs }, new Date());
      console.log(`requeued ${count} dead ${count === 1 ? 'entry' : 'entries'}`);
      return 0;
    }
    const dead = await inbox.list({ state: 'dead', source: parsed.source });
    for (const entry of dead) console.log(parsed.json ? JSON.stringify(describe(entry)) : line(entry));
    if (!parsed.json) console.error(`${dead.length} dead ${dead.length === 1 ? 'entry' : 'entries'}`);
    return 0;
  } finally {
    await inbox.close();
  }
}

/** One JSON line per entry, snake_case like every `--json` of the CLI. */
function describe(entry: InboxEntry) {
  return {
    seq: entry.seq,
    source: entry.source,
    event_type: entry.eventType,
    event_id: entry.eventId,
    delivery_id: entry.deliveryId,
    via: entry.via,
    received_at: entry.receivedAt.toISOString(),
    attempts: entry.attempts,
    last_error: entry.lastError,
  };
}

function line(entry: InboxEntry): string {
  const error = (entry.lastError ?? '').replace(/\s+/g, ' ');
  return [
    `#${entry.seq}`,
    entry.source,
    entry.eventType,
    entry.eventId,
    entry.deliveryId ?? `(${entry.via})`,
    entry.receivedAt.toISOString(),
    `${entry.attempts} attempts`,
    error,
  ].join('  ');
}
