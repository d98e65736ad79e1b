/**
 * Issue #34, finding 4 (slowloris): clients trickling request bodies a byte at a time held every
 * --max-concurrent slot for as long as they liked (no body timeout). A body not complete within
 * the body timeout now gets 408 REQUEST_TIMEOUT and its connection closed, and the slots come
 * back. Real sockets: app.inject never meets a slow body.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { listeningApp } from './http-fixture.js';

/** Headers of a create, then one body byte every 20 ms until the server closes; resolves with what it answered. */
function trickle(port: number, host = '127.0.0.1'): { answered: Promise<string>; started: Promise<void> } {
  const socket = connect(port, '127.0.0.1');
  let text = '';
  let timer: NodeJS.Timeout | undefined;
  const started = new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  const answered = new Promise<string>((resolve) => {
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
    });
    socket.on('error', () => {});
    socket.once('close', () => {
      clearInterval(timer);
      resolve(text);
    });
  });
  void started.then(() => {
    socket.write(`POST /v1/objects/board HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"data":{"name":"`);
    timer = setInterval(() => {
      if (socket.writable) socket.write('x');
    }, 20);
  });
  return { answered, started };
}

async function connections(server: { getConnections(cb: (err: Error | null, n: number) => void): void }): Promise<number> {
  return new Promise((resolve, reject) => server.getConnections((err, n) => (err ? reject(err) : resolve(n))));
}

test('bodies that never finish arriving get 408 REQUEST_TIMEOUT and their connection closed; the slots they held come back', async () => {
  const f = await listeningApp({ limits: { maxConcurrent: 2 }, app: { bodyTimeoutMs: 300 } });
  try {
    const slow = [trickle(f.port), trickle(f.port)];
    await Promise.all(slow.map((s) => s.started));
    // Bounded wait for the outcome: on code without a body timeout these never answer.
    const answers = await Promise.race([
      Promise.all(slow.map((s) => s.answered)),
      sleep(20_000, undefined, { ref: false }).then(() => undefined),
    ]);
    assert.ok(answers !== undefined, 'the trickling uploads were never answered nor closed (no body timeout)');
    for (const text of answers) {
      assert.match(text, /^HTTP\/1\.1 408 /, text.slice(0, 200));
      assert.match(text, /"code":"REQUEST_TIMEOUT"/);
      assert.match(text, /connection: close/i);
    }
    // The client saw its socket close; the server lets go of its side (and the slot) just after.
    for (let i = 0; i < 500 && (await connections(f.app.server)) > 0; i++) await sleep(10);
    assert.equal(await connections(f.app.server), 0, 'no connection of the slow clients left on the server');
    // The slots follow on the next ticks (the responses' close events): a bounded wait for them.
    let after = await f.app.inject({ method: 'GET', url: '/v1/topology' });
    for (let i = 0; i < 500 && after.statusCode === 503; i++) {
      await sleep(10);
      after = await f.app.inject({ method: 'GET', url: '/v1/topology' });
    }
    assert.equal(after.statusCode, 200, after.body);
    const created = await f.app.inject({ method: 'POST', url: '/v1/objects/board', payload: { data: { name: 'honest' } } });
    assert.equal(created.statusCode, 201, created.body);
  } finally {
    f.app.server.closeAllConnections();
    await f.cleanup();
  }
});

test('a body still trickling after its request was answered (shed, refused) has its connection closed at the body deadline', async () => {
  // Node reads and drops the rest of such a body on a kept-alive connection: without the
  // deadline the socket was held for ever (found by the abuse swarm: a 503 then a trickle).
  const f = await listeningApp({ limits: { maxConcurrent: 1 }, app: { bodyTimeoutMs: 300, hosts: ['127.0.0.1'] } });
  try {
    const refused = trickle(f.port, 'rebind.attacker.example');
    await refused.started;
    const text = await Promise.race([refused.answered, sleep(20_000, undefined, { ref: false }).then(() => undefined)]);
    assert.ok(text !== undefined, 'the connection of the refused, still trickling request was never closed');
    assert.match(text, /^HTTP\/1\.1 421 /, text.slice(0, 200));
    // Status lines only: the random x-request-id may hold the digits 408 (CI failed on '...-408c-...').
    assert.equal(text.match(/HTTP\/1\.1 \d{3} /g)?.length, 1, 'one answer per request');
    assert.doesNotMatch(text, /HTTP\/1\.1 408 /, 'one answer per request');
  } finally {
    f.app.server.closeAllConnections();
    await f.cleanup();
  }
});

test('uploads on one kept-alive connection leave no listener behind on its socket', async () => {
  // Each request with a body added a 'close' listener to the socket and never removed it: 11
  // uploads on one connection printed MaxListenersExceededWarning, and the socket held them all.
  const f = await listeningApp();
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const sockets: Socket[] = [];
    f.app.server.on('connection', (s: Socket) => sockets.push(s));
    const counts: number[] = [];
    for (let i = 0; i < 30; i++) {
      const status = await new Promise<number>((resolve, reject) => {
        const req = request({ agent, host: '127.0.0.1', port: f.port, method: 'POST', path: '/v1/objects/board', headers: { 'content-type': 'application/json' } }, (res) => {
          res.resume();
          res.once('end', () => resolve(res.statusCode ?? 0));
        });
        req.once('error', reject);
        req.end(JSON.stringify({ data: { name: `b${i}` } }));
      });
      assert.equal(status, 201);
      counts.push(sockets[0]!.listenerCount('close'));
    }
    assert.equal(sockets.length, 1, 'all 30 uploads went over one connection');
    assert.equal(counts.at(-1), counts[0], `close listeners on the socket after each upload: ${counts.join(' ')}`);
  } finally {
    agent.destroy();
    f.app.server.closeAllConnections();
    await f.cleanup();
  }
});
