import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { once } from 'node:events';
import { listensOn } from './port-owner.js';

async function listen(): Promise<{ server: Server; port: number }> {
  const server = createServer();
  server.listen({ port: 0, host: '127.0.0.1' });
  await once(server, 'listening');
  return { server, port: (server.address() as { port: number }).port };
}

test('listensOn: true for the process that listens on the port, false for another process and for a closed port', async () => {
  const { server, port } = await listen();
  // A child that listens on a port of its own and prints it.
  const child = spawn(process.execPath, ['-e', "const s = require('net').createServer().listen(0, '127.0.0.1', () => console.log(s.address().port)); setInterval(() => {}, 1000)"], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const [chunk] = (await once(child.stdout!, 'data')) as [Buffer];
    const childPort = Number(chunk.toString().trim());
    assert.equal(listensOn(process.pid, port), true);
    assert.equal(listensOn(child.pid!, port), false, 'the child can connect to the port, but it is not the one listening');
    assert.equal(listensOn(child.pid!, childPort), true);
    assert.equal(listensOn(process.pid, childPort), false);
  } finally {
    child.kill('SIGKILL');
    await once(child, 'exit');
    await new Promise((r) => server.close(r));
  }
  assert.equal(listensOn(process.pid, port), false, 'closed');
  assert.equal(listensOn(2 ** 22 + 12345, port), false, 'no such process');
});
