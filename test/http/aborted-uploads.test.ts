/**
 * Issue #34, finding 1: a client that goes away in the middle of a request body (curl killed
 * during a slow upload) must not keep its socket (CLOSE-WAIT) or its --max-concurrent slot: after
 * as many aborted uploads as there are slots, every route still answers, and the server holds no
 * connection of theirs. Over real sockets (app.inject never meets the HTTP parser).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { listeningApp } from './http-fixture.js';
import { heldCount, heldSockets } from './os-sockets.js';

/** Headers of a 1 MB create, then part of its body; the socket is left open. */
async function startUpload(port: number): Promise<Socket> {
  const socket = connect(port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  socket.on('error', () => {});
  socket.write('POST /v1/objects/board HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{"data":{"name":"');
  socket.write('x'.repeat(1000));
  return socket;
}

async function connections(server: { getConnections(cb: (err: Error | null, n: number) => void): void }): Promise<number> {
  return new Promise((resolve, reject) => server.getConnections((err, n) => (err ? reject(err) : resolve(n))));
}

for (const how of ['end', 'destroy'] as const) {
  test(`uploads the client gives up on mid-body (${how === 'end' ? 'FIN: curl killed' : 'RST'}) release their slot and their socket`, async () => {
    const f = await listeningApp({ limits: { maxConcurrent: 2 } });
    try {
      const uploads = [await startUpload(f.port), await startUpload(f.port)];
      // Both slots are taken while the bodies are on their way.
      for (let i = 0; i < 200 && (await f.app.inject({ method: 'GET', url: '/v1/topology' })).statusCode !== 503; i++) await sleep(10);
      assert.equal((await f.app.inject({ method: 'GET', url: '/v1/topology' })).statusCode, 503, 'the two uploads hold both slots');
      for (const s of uploads) (how === 'end' ? s.end() : s.destroy());
      // Until the server has let both go (a bounded wait: an outcome, not a timing margin).
      for (let i = 0; i < 500 && ((await connections(f.app.server)) > 0 || heldCount(f.port) > 0); i++) await sleep(10);
      assert.equal(await connections(f.app.server), 0, 'no socket left open (CLOSE-WAIT) by the aborted uploads');
      assert.deepEqual(heldSockets(f.port), {}, 'the kernel lists no server-side socket of the aborted uploads');
      const after = await f.app.inject({ method: 'GET', url: '/v1/topology' });
      assert.equal(after.statusCode, 200, after.body);
      const created = await f.app.inject({ method: 'POST', url: '/v1/objects/board', payload: { data: { name: 'after' } } });
      assert.equal(created.statusCode, 201, created.body);
    } finally {
      // The old code's stuck sockets would keep close() waiting for ever.
      f.app.server.closeAllConnections();
      await f.cleanup();
    }
  });
}
