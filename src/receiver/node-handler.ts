// node:http (and Express) adapter: same behaviour and statuses as the Fastify plugin. It reads the raw
// body itself, or takes the bytes a framework already read (req.rawBody, or a Buffer req.body);
// a parsed JSON object is refused rather than re-serialized, since its signature could not be checked.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { acceptDelivery, acceptedBody, DEFAULT_MAX_BODY_BYTES, distinctHeaders, type IntakeOptions } from './intake.ts';
import { problem, PROBLEM_CONTENT_TYPE, type Problem } from './problems.ts';
import type { InboxWorker } from './worker.ts';

type MaybeReadRequest = IncomingMessage & { rawBody?: unknown; body?: unknown };

const ROUTE = /^\/webhooks\/([^/]+)$/;

class TooLarge extends Error {}

function send(
  res: ServerResponse,
  status: number,
  body: object,
  contentType: string,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res
    .writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(text), ...headers })
    .end(text);
}

function sendProblem(res: ServerResponse, p: Problem, headers?: Record<string, string>): void {
  send(res, p.status, p, PROBLEM_CONTENT_TYPE, headers);
}

function alreadyRead(req: MaybeReadRequest): Buffer | undefined {
  if (Buffer.isBuffer(req.rawBody)) return req.rawBody;
  if (typeof req.rawBody === 'string') return Buffer.from(req.rawBody, 'utf8');
  if (Buffer.isBuffer(req.body)) return req.body;
  return undefined;
}

function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    if (Number(req.headers['content-length'] ?? 0) > maxBytes) return reject(new TooLarge());
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= maxBytes) return void chunks.push(chunk);
      req.off('data', onData);
      req.resume(); // discard the rest so the 413 can be written
      reject(new TooLarge());
    };
    req.on('data', onData);
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** The source named by the path, or a problem for any other path or method. */
function route(req: IncomingMessage): { source: string } | { problem: Problem; headers?: Record<string, string> } {
  const path = new URL(req.url ?? '/', 'http://receiver.invalid').pathname;
  const match = ROUTE.exec(path);
  if (!match?.[1])
    return { problem: problem('not-found', `no route for ${path}; webhooks are posted to /webhooks/<source>`) };
  if (req.method !== 'POST')
    return {
      problem: problem('method-not-allowed', `${req.method ?? ''} is not allowed; webhooks are POSTed`),
      headers: { allow: 'POST' },
    };
  let source: string;
  try {
    source = decodeURIComponent(match[1]);
  } catch {
    return { problem: problem('not-found', 'the source in the path is not valid percent-encoding') };
  }
  return { source };
}

async function handle(
  options: IntakeOptions & { worker?: InboxWorker },
  req: MaybeReadRequest,
  res: ServerResponse,
): Promise<void> {
  const target = route(req);
  if ('problem' in target) return sendProblem(res, target.problem, target.headers);
  const maxBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  let rawBody = alreadyRead(req);
  if (rawBody === undefined) {
    // A framework that parsed (or drained) the body left nothing whose signature could be checked.
    if (req.body !== undefined || req.readableEnded)
      return sendProblem(
        res,
        problem(
          'bad-request',
          'the body was already read by a framework; pass the raw bytes (req.rawBody) so the signature can be verified',
        ),
      );
    try {
      rawBody = await readBody(req, maxBytes);
    } catch (error) {
      if (error instanceof TooLarge)
        return sendProblem(res, problem('payload-too-large', `the body exceeds ${maxBytes} bytes`), {
          connection: 'close',
        });
      throw error;
    }
  }
  const result = await acceptDelivery(options, { source: target.source, rawBody, headers: distinctHeaders(req) });
  if (result.problem) return sendProblem(res, result.problem);
  if (!result.duplicate) options.worker?.wake();
  send(res, 200, acceptedBody(result), 'application/json; charset=utf-8');
}

export type WebhookHandlerOptions = IntakeOptions & {
  worker?: InboxWorker;
  /** Told about faults (the inbox could not store a delivery); never given the body or a secret. */
  onError?: (error: unknown) => void;
};

export function createWebhookHandler(
  options: WebhookHandlerOptions,
): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    handle(options, req, res).catch((error: unknown) => {
      options.onError?.(error);
      // The inbox could not store the delivery: no 200, so the producer retries. Details stay out of
      // the response (and the body is never logged).
      if (!res.headersSent)
        sendProblem(res, problem('internal-error', 'the webhook could not be stored; the producer will retry'));
      else res.destroy();
    });
  };
}
