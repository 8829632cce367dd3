// Running out of file descriptors never ends the process: client connections are capped
// (MAX_CONNECTIONS, by default 80 % of the open-file limit), and when descriptors run out anyway no
// timer or accept() failure throws. Real `signet serve` children under a small `ulimit -n`.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { defaultMaxConnections, descriptorLimit } from '../../src/config/descriptors.ts';
import { startChildServer, type ChildServer } from '../helpers/child-server.ts';
import { waitUntil, withDeadline } from '../helpers/deadline.ts';
import { call, CUSTOMER } from '../helpers/http.ts';

/** Opens `count` idle TCP connections; the server may close any of them. */
async function openIdle(port: number, count: number): Promise<Socket[]> {
  const all: Socket[] = [];
  let settled = 0;
  const sockets = Array.from({ length: count }, () => {
    const socket = connect(port, '127.0.0.1');
    all.push(socket);
    socket.on('error', () => undefined); // closed or reset by a server at its limit
    return new Promise<Socket>((resolve) => {
      const done = (): void => {
        settled++;
        resolve(socket);
      };
      socket.once('connect', done);
      socket.once('close', done);
    });
  });
  // A full accept backlog leaves a connect waiting on SYN retries for minutes: fail instead, saying how far it got.
  return withDeadline(Promise.all(sockets), 30_000, () => {
    for (const socket of all) socket.destroy();
    return `${settled} of ${count} connections to port ${port} connected or closed`;
  });
}

const stillOpen = (sockets: Socket[]): number => sockets.filter((s) => !s.destroyed).length;

function closeAll(sockets: Socket[]): void {
  for (const socket of sockets) socket.destroy();
}

async function assertServes(server: ChildServer, label: string): Promise<void> {
  // The server frees its descriptors as it reads the clients' FINs: until then a connection may still be refused.
  let health = { status: 0, text: '(not asked yet)' };
  await waitUntil(
    async () => {
      health = await call(server.url, 'GET', '/healthz').catch((err: Error) => ({ status: 0, text: err.message }));
      return health.status === 200;
    },
    10_000,
    () => `${label}: ${health.text}\n${server.output()}`,
  );
  const token = await server.issuer.clientToken('orders:read orders:write');
  const created = await call(server.url, 'POST', '/api/orders', { token, body: { CustomerId: CUSTOMER, Total: 1 } });
  assert.equal(created.status, 201, `${label}: ${created.text}`);
}

describe('descriptor exhaustion', () => {
  test(
    'connections over MAX_CONNECTIONS are closed at once and logged; the process keeps serving',
    { timeout: 60_000 },
    async () => {
      // ulimit -n 256: the default cap is 204 connections.
      const server = await startChildServer({ openFileLimit: 256 });
      try {
        const sockets = await openIdle(server.port, 400);
        await server.waitFor(/MAX_CONNECTIONS \(204\) reached/);
        await waitUntil(
          () => stillOpen(sockets) <= 204,
          10_000,
          () => `${stillOpen(sockets)} connections still open, cap 204`,
        );
        assert.ok(server.alive(), server.output());
        closeAll(sockets);
        await assertServes(server, 'after the flood');
      } finally {
        await server.stop();
      }
    },
  );

  test(
    'when descriptors run out anyway (cap above the limit), neither accept() nor a timer ends the process',
    { timeout: 60_000 },
    async () => {
      const server = await startChildServer({
        openFileLimit: 128,
        env: { MAX_CONNECTIONS: '100000', MAX_EVENT_LOOP_DELAY_MS: '1000', LOG_LEVEL: 'trace' },
      });
      try {
        const sockets = await openIdle(server.port, 300);
        // libuv closes what it cannot accept (its EMFILE trick): connections closed by the server show the limit was hit.
        await waitUntil(
          () => stillOpen(sockets) < 300,
          10_000,
          () => `all 300 connections open: the limit was never reached\n${server.output()}`,
        );
        // The overload guard's sampler must run twice while every descriptor is taken (@fastify/under-pressure's
        // threw EMFILE here and the process exited with code 1); it logs each run at trace level.
        const exhaustedAt = server.output().length;
        const samples = (): number => server.output().slice(exhaustedAt).split('event loop delay sampled').length - 1;
        await waitUntil(
          () => samples() >= 2 || !server.alive(),
          10_000,
          () => `${samples()} samples of the event loop delay since the descriptors ran out\n${server.output()}`,
        );
        assert.ok(server.alive(), `the process exited:\n${server.output()}`);
        closeAll(sockets);
        await assertServes(server, 'after descriptors are free again');
      } finally {
        await server.stop();
      }
    },
  );
});

describe('MAX_CONNECTIONS default', () => {
  test('is 80 % of the soft open-file limit, within 64 and 65,536', () => {
    assert.equal(defaultMaxConnections(1024), 819);
    assert.equal(defaultMaxConnections(20), 64);
    assert.equal(defaultMaxConnections(1_048_576), 65_536);
  });

  test('reads the soft limit from /proc/self/limits, with a fallback when it cannot', () => {
    const file = join(tmpdir(), `signet-limits-${process.pid}`);
    writeFileSync(
      file,
      'Limit                     Soft Limit           Hard Limit           Units\nMax open files            4096                 524288               files\n',
    );
    assert.equal(descriptorLimit(file), 4096);
    writeFileSync(file, 'Max open files            unlimited            unlimited            files\n');
    assert.equal(defaultMaxConnections(descriptorLimit(file)), 65_536);
    assert.equal(descriptorLimit(join(tmpdir(), 'no-such-limits-file')), 1024);
  });
});
