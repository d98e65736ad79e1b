/** The chaos runs' TCP proxy: what passes, what is held, what is cut. Server-free (a local echo server). */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mulberry32 } from '../../src/util/prng.js';
import { TcpProxy } from './tcp-proxy.js';

let echo: net.Server;
let echoPort: number;
before(async () => {
  echo = net.createServer((s) => s.pipe(s));
  await new Promise<void>((r) => echo.listen(0, '127.0.0.1', r));
  echoPort = (echo.address() as net.AddressInfo).port;
});
after(() => new Promise<void>((r) => echo.close(() => r())));

function connect(port: number): Promise<{ sock: net.Socket; received: () => string; closed: Promise<void> }> {
  return new Promise((resolve, reject) => {
    let got = '';
    const sock = net.connect(port, '127.0.0.1', () => resolve({ sock, received: () => got, closed }));
    const closed = new Promise<void>((r) => sock.once('close', () => r()));
    sock.on('data', (b: Buffer) => (got += b.toString()));
    sock.once('error', reject);
  });
}

async function until(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((r) => setImmediate(r));
}

test('pass and delay (with jitter) deliver every byte in order', async () => {
  const proxy = await TcpProxy.start(echoPort);
  try {
    const c = await connect(proxy.port);
    c.sock.write('a');
    await until(() => c.received() === 'a');
    proxy.mode = { kind: 'delay', ms: 5, jitterMs: 20 };
    for (const ch of 'bcdefgh') c.sock.write(ch);
    await until(() => c.received().length === 8);
    assert.equal(c.received(), 'abcdefgh');
    c.sock.destroy();
  } finally {
    await proxy.close();
  }
});

test('a black hole holds the bytes until it is lifted, then delivers them in order', async () => {
  const proxy = await TcpProxy.start(echoPort);
  try {
    const c = await connect(proxy.port);
    proxy.mode = { kind: 'blackhole' };
    c.sock.write('held');
    // The bytes reached the proxy (it holds them) but not the server's answer.
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(c.received(), '');
    proxy.mode = { kind: 'pass' };
    await until(() => c.received() === 'held');
    c.sock.destroy();
  } finally {
    await proxy.close();
  }
});

test('reset cuts open connections and refuses new ones; pass accepts again', async () => {
  const proxy = await TcpProxy.start(echoPort);
  try {
    const c = await connect(proxy.port);
    proxy.mode = { kind: 'reset' };
    await c.closed;
    const refused = await connect(proxy.port);
    await refused.closed;
    assert.equal(proxy.connections, 0);
    proxy.mode = { kind: 'pass' };
    const again = await connect(proxy.port);
    again.sock.write('ok');
    await until(() => again.received() === 'ok');
    again.sock.destroy();
  } finally {
    await proxy.close();
  }
});

test('a proxy on a unix socket path (the supervisor\'s way to a server) with jitter and loss delivers every byte in order', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-proxy-'));
  const server = net.createServer((s) => s.pipe(s));
  await new Promise<void>((r) => server.listen(join(dir, 'server.sock'), r));
  // Seeded: about half the chunks are "lost" and arrive a retransmission later.
  const proxy = await TcpProxy.start(join(dir, 'server.sock'), mulberry32(7), join(dir, 'proxy.sock'));
  try {
    proxy.mode = { kind: 'delay', ms: 0, jitterMs: 20, loss: 0.5 };
    let got = '';
    const sock = net.connect(join(dir, 'proxy.sock'));
    sock.on('data', (b: Buffer) => (got += b.toString()));
    for (const ch of 'abcdefgh') sock.write(ch);
    await until(() => got.length === 8);
    assert.equal(got, 'abcdefgh');
    sock.destroy();
  } finally {
    await proxy.close();
    await new Promise<void>((r) => server.close(() => r()));
    rmSync(dir, { recursive: true, force: true });
  }
});
