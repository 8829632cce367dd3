// `signet receiver`: the consumer kit (src/receiver) as its own process. It verifies and durably records
// each delivery, answers at once, and hands every event to a handler module, or, without one, writes it as
// one JSON line to stdout or a file. Secrets can come from stdin or SIGNET_RECEIVER_SECRET, so they never
// have to appear in `ps` or the shell history.
import { createWriteStream, type WriteStream } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import closeWithGrace from 'close-with-grace';
import { startStandaloneReceiver, type EventHandler, type StandaloneOptions } from '../receiver/index.ts';
import { UsageError } from './admin.ts';
import { DEAD_LETTER_USAGE, deadLetterCommand, inboxDatabaseOption } from './receiver-dead.ts';

const RECEIVER_USAGE = `usage:
  signet receiver --port <port> --source <name> --secret <secret> [--secret <previous>]...
                  [--secret-stdin] [--database sqlite:./signet-receiver.db|postgres://…]
                  [--handler ./handler.js] [--out events.jsonl] [--header-name Service]
                  [--reconcile-from https://producer --client-id <id> --client-secret-stdin
                   [--reconcile-types order.paid,order.cancelled]]
                  [--host 127.0.0.1]
    Receives POST /webhooks/<source>. Several secrets (newest first) accept signatures during a rotation;
    --secret-stdin reads them one per line, SIGNET_RECEIVER_SECRET takes a comma list. The handler
    module's default export receives each event; without one, each event is one JSON line on stdout
    (or appended to --out). With --reconcile-from, events missed while down are read from the
    producer's /api/events with a client-credentials token (secret: stdin or SIGNET_RECEIVER_CLIENT_SECRET),
    all the types the client may read unless --reconcile-types names those the endpoint subscribes to.
${DEAD_LETTER_USAGE.replace(/^usage:\n/, '')}`;

const SOURCE = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const HEADER_WORD = /^[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*$/;

interface ReceiverArguments {
  options: StandaloneOptions;
  handlerPath: string | undefined;
  outPath: string | undefined;
}

/** Parses and validates everything that does not need I/O; throws UsageError with what to change. */
function parseReceiverArgs(
  args: string[],
  env: Record<string, string | undefined>,
  stdinText?: string,
): ReceiverArguments {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      source: { type: 'string' },
      secret: { type: 'string', multiple: true },
      'secret-stdin': { type: 'boolean' },
      database: { type: 'string' },
      handler: { type: 'string' },
      out: { type: 'string' },
      'header-name': { type: 'string' },
      'reconcile-from': { type: 'string' },
      'client-id': { type: 'string' },
      'client-secret-stdin': { type: 'boolean' },
      'reconcile-types': { type: 'string' },
    },
  });
  if (positionals.length > 0)
    throw new UsageError(`unexpected argument ${JSON.stringify(positionals[0])}\n\n${RECEIVER_USAGE}`);

  if (values.port === undefined)
    throw new UsageError(`--port <port> is required (0 picks a free one)\n\n${RECEIVER_USAGE}`);
  if (!/^\d{1,5}$/.test(values.port) || Number(values.port) > 65535)
    throw new UsageError(`--port must be an integer from 0 to 65535 (got ${JSON.stringify(values.port)})`);
  const port = Number(values.port);
  const host = values.host ?? '127.0.0.1';
  if (!host.trim()) throw new UsageError('--host must not be empty');

  if (!values.source)
    throw new UsageError(
      `--source <name> is required: deliveries are received at POST /webhooks/<name>\n\n${RECEIVER_USAGE}`,
    );
  if (!SOURCE.test(values.source))
    throw new UsageError(
      `--source must be letters, digits, "_", "-" or "." (at most 64, got ${JSON.stringify(values.source)})`,
    );

  if (values['secret-stdin'] && values['client-secret-stdin']) {
    throw new UsageError(
      '--secret-stdin and --client-secret-stdin cannot both read standard input: pass the webhook secrets in SIGNET_RECEIVER_SECRET or the client secret in SIGNET_RECEIVER_CLIENT_SECRET',
    );
  }
  const secrets = [
    ...(values.secret ?? []),
    ...(values['secret-stdin'] ? (stdinText ?? '').split(/\r?\n/) : []),
    ...(env.SIGNET_RECEIVER_SECRET ? env.SIGNET_RECEIVER_SECRET.split(',') : []),
  ]
    .map((s) => s.trim())
    .filter(Boolean);
  if (values.secret?.some((s) => !s.trim())) throw new UsageError('--secret must not be empty');
  if (secrets.length === 0)
    throw new UsageError(
      `at least one secret is required: --secret <secret>, --secret-stdin or SIGNET_RECEIVER_SECRET\n\n${RECEIVER_USAGE}`,
    );
  const uniqueSecrets = [...new Set(secrets)];

  const database = inboxDatabaseOption(values.database);

  if (values.handler !== undefined && !values.handler.trim()) throw new UsageError('--handler must name a module file');
  if (values.out !== undefined && !values.out.trim()) throw new UsageError('--out must name a file');
  if (values.handler !== undefined && values.out !== undefined)
    throw new UsageError('--out only applies without --handler: the handler decides what to do with each event');

  const headerName = values['header-name'];
  if (headerName !== undefined && !HEADER_WORD.test(headerName))
    throw new UsageError(
      `--header-name must be a header word such as Service or Acme-Shop (got ${JSON.stringify(headerName)})`,
    );

  const options: StandaloneOptions = { port, host, sources: { [values.source]: uniqueSecrets }, database };
  if (headerName !== undefined) options.headerName = headerName;

  const from = values['reconcile-from'];
  if (from !== undefined) {
    const url = URL.parse(from);
    if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:') || url.search || url.hash) {
      throw new UsageError(
        `--reconcile-from must be the producer's base URL, http(s)://host[:port] (got ${JSON.stringify(from)})`,
      );
    }
    if (!values['client-id'])
      throw new UsageError(
        '--reconcile-from needs --client-id <id> of a client-credentials client with the events:read scope',
      );
    const clientSecret = values['client-secret-stdin']
      ? (stdinText ?? '').replace(/\r?\n$/, '')
      : (env.SIGNET_RECEIVER_CLIENT_SECRET ?? '');
    if (!clientSecret.trim())
      throw new UsageError(
        '--reconcile-from needs the client secret: --client-secret-stdin (pipe it in) or SIGNET_RECEIVER_CLIENT_SECRET',
      );
    options.reconcile = {
      from: from.replace(/\/+$/, ''),
      clientId: values['client-id'],
      clientSecret: clientSecret.trim(),
      source: values.source,
    };
    if (values['reconcile-types'] !== undefined) options.reconcile.types = eventTypes(values['reconcile-types']);
  } else if (
    values['client-id'] !== undefined ||
    values['client-secret-stdin'] ||
    values['reconcile-types'] !== undefined
  ) {
    throw new UsageError(
      '--client-id, --client-secret-stdin and --reconcile-types only apply with --reconcile-from <producer URL>',
    );
  }

  return { options, handlerPath: values.handler, outPath: values.out };
}

const EVENT_TYPE = /^[a-z][a-z0-9_]*(?:\.[a-z0-9_]+)+$/;

function eventTypes(list: string): string[] {
  const types = list.split(',').map((t) => t.trim());
  const bad = types.filter((t) => !EVENT_TYPE.test(t));
  if (bad.length > 0)
    throw new UsageError(
      `--reconcile-types takes event types separated by commas, such as order.paid,order.cancelled (not ${bad.map((t) => JSON.stringify(t)).join(', ')})`,
    );
  return [...new Set(types)];
}

export async function receiverCommand(args: string[]): Promise<number> {
  if (args[0] === 'dead' || args[0] === 'requeue') return deadLetterCommand(args[0], args.slice(1));
  if (args.includes('--help') || args.includes('-h')) {
    console.log(RECEIVER_USAGE);
    return 0;
  }
  const needsStdin = args.includes('--secret-stdin') || args.includes('--client-secret-stdin');
  const stdinText = needsStdin ? await readAllStdin() : undefined;
  const parsed = parseReceiverArgs(args, process.env, stdinText);
  const options: StandaloneOptions = { ...parsed.options };

  let out: WriteStream | undefined;
  if (parsed.handlerPath !== undefined) options.handler = await loadHandler(parsed.handlerPath);
  else if (parsed.outPath !== undefined) {
    out = createWriteStream(resolve(parsed.outPath), { flags: 'a' });
    await new Promise<void>((ready, fail) => {
      out!.once('open', () => ready());
      out!.once('error', (err) => fail(new UsageError(`--out ${parsed.outPath}: ${err.message}`)));
    });
    options.out = out;
  } else options.out = process.stdout;

  const receiver = await startStandaloneReceiver(options).catch(async (err: unknown) => {
    out?.end();
    throw err;
  });
  const [source] = Object.keys(options.sources);
  console.error(
    `signet receiver: listening on ${receiver.url}/webhooks/${source} (${Object.values(options.sources)[0]!.length} secret(s), inbox ${redact(options.database!)}${options.reconcile ? `, reconciling from ${options.reconcile.from}` : ''})`,
  );

  closeWithGrace({ delay: 10_000 }, async ({ signal, err }) => {
    if (err) console.error('signet receiver: stopping after an error', err);
    else console.error(`signet receiver: ${signal ?? 'stop'} received, finishing the event in progress`);
    await receiver.close();
    if (out) await new Promise<void>((done) => out!.end(() => done()));
  });
  return -1; // keeps running
}

async function loadHandler(path: string): Promise<EventHandler> {
  let loaded: { default?: unknown };
  try {
    loaded = (await import(pathToFileURL(resolve(path)).href)) as { default?: unknown };
  } catch (err) {
    throw new UsageError(`--handler ${path} could not be loaded: ${(err as Error).message}`);
  }
  if (typeof loaded.default !== 'function')
    throw new UsageError(
      `--handler ${path} must export a function as its default export: export default async function (event) { … }`,
    );
  return loaded.default as EventHandler;
}

async function readAllStdin(): Promise<string> {
  if (process.stdin.isTTY)
    throw new UsageError('--secret-stdin and --client-secret-stdin read from standard input: pipe the secret in');
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** A database URL without its password, for the start-up line. */
function redact(url: string): string {
  const parsed = URL.parse(url);
  if (!parsed || !parsed.password) return url;
  parsed.password = '***';
  return parsed.toString();
}
