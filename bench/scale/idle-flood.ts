// Idle connections against the connection cap (docs/operations/failure-behaviour.md, "Connections"): a real
// `signet serve` on SQLite with MAX_CONNECTIONS=N, flooded with N connections that never send a byte; then how long a
// new client waits for GET /healthz, against the same measure without the flood in the same run, and how long the
// flood lives before HEADERS_TIMEOUT closes it. Usage: node bench/scale/idle-flood.ts [N] (default 8000; the open-file
// limit of this shell must allow N + a few hundred).
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

const N = Number(process.argv[2] ?? 8000);
const PROBES = 20;
const BIN = new URL('../../bin/signet.js', import.meta.url).pathname;

async function startServer(dir: string, headersTimeout: string): Promise<{ port: number; stop(): void }> {
  const child = spawn(process.execPath, [BIN, 'serve'], {
    env: {
      ...process.env,
      PORT: '0',
      DATABASE_URL: `sqlite:${join(dir, 'signet.db')}`,
      MAX_CONNECTIONS: String(N),
      HEADERS_TIMEOUT: headersTimeout,
      METRICS_PORT: 'off',
      LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening at http:\/\/127\.0\.0\.1:(\d+)/.exec(output);
      if (match) resolve(Number(match[1]));
    });
    child.once('exit', (code) => reject(new Error(`signet serve exited with ${code}: ${output}`)));
  });
  return { port, stop: () => child.kill('SIGKILL') };
}

/** Milliseconds from connecting to the end of a GET /healthz on a new connection. */
function probe(port: number): Promise<number> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () =>
      socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n'),
    );
    let text = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => (text += chunk));
    socket.on('error', reject);
    socket.on('close', () =>
      text.startsWith('HTTP/1.1 200') ? resolve(performance.now() - started) : reject(new Error(`answer: ${text}`)),
    );
  });
}

async function probes(port: number): Promise<{ median: number; max: number }> {
  const times: number[] = [];
  for (let i = 0; i < PROBES; i++) times.push(await probe(port));
  times.sort((a, b) => a - b);
  return { median: times[Math.floor(PROBES / 2)]!, max: times.at(-1)! };
}

async function flood(port: number): Promise<Socket[]> {
  const sockets: Socket[] = [];
  for (let batch = 0; batch < N; batch += 500) {
    const opened = Array.from({ length: Math.min(500, N - batch) }, () => {
      const socket = connect(port, '127.0.0.1');
      socket.on('error', () => undefined);
      socket.resume(); // read the 408 and the FIN, or the socket never closes on this side
      sockets.push(socket);
      return new Promise<void>((resolve) => {
        socket.once('connect', () => resolve());
        socket.once('close', () => resolve());
      });
    });
    await Promise.all(opened);
  }
  return sockets;
}

const f = (ms: number) => `${ms.toFixed(1)} ms`;

/** HEADERS_TIMEOUT long enough that only the cap closes connections: a new client against a full table. */
async function atTheCap(): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'signet-idle-flood-'));
  const server = await startServer(dir, '60s');
  try {
    const baseline = await probes(server.port);
    const floodStart = performance.now();
    const sockets = await flood(server.port);
    const floodMs = performance.now() - floodStart;
    const open = sockets.filter((s) => !s.destroyed).length;
    const flooded = await probes(server.port);
    const evicted = sockets.filter((s) => s.destroyed).length;
    for (const socket of sockets) socket.destroy();
    return `| ${N} silent, opened in ${(floodMs / 1000).toFixed(1)} s, ${open} open | ${f(baseline.median)} / ${f(baseline.max)} | ${f(flooded.median)} / ${f(flooded.max)} | ${evicted} |`;
  } finally {
    server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The default HEADERS_TIMEOUT (5 s): how long until the whole flood is closed by the server. */
async function sweep(): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'signet-idle-flood-'));
  const server = await startServer(dir, '5s');
  try {
    const start = performance.now();
    const sockets = await flood(server.port);
    while (sockets.some((s) => !s.destroyed)) await new Promise((resolve) => setTimeout(resolve, 100));
    return `${N} silent connections all closed ${((performance.now() - start) / 1000).toFixed(1)} s after the first opened (HEADERS_TIMEOUT=5s, checked every second)`;
  } finally {
    server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

console.log(
  '| Flood (MAX_CONNECTIONS = N) | New client, no flood (median / max) | New client at the cap (median / max) | Flood connections closed for the 20 new clients |',
);
console.log('|---|---|---|---|');
console.log(await atTheCap());
console.log(await sweep());
