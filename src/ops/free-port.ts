import { createServer } from 'node:net';

// Below Linux's ephemeral range (32768-60999), so outgoing connections never hold a server's
// port while that server is down and being restarted.
const LOW = 20000;
const HIGH = 32000;

function tryListen(port: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(undefined));
    server.listen({ port, host: '127.0.0.1', exclusive: true }, () => {
      const address = server.address();
      const got = typeof address === 'object' && address ? address.port : undefined;
      server.close(() => resolve(got));
    });
  });
}

/**
 * A TCP port on 127.0.0.1 that is free right now (another process may still take it before the
 * server binds it; MariadbInstance.start reports that case so the caller can pick again).
 */
export async function pickFreePort(avoid: ReadonlySet<number> = new Set()): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const candidate = LOW + Math.floor(Math.random() * (HIGH - LOW));
    if (avoid.has(candidate)) continue;
    const port = await tryListen(candidate);
    if (port !== undefined) return port;
  }
  const port = await tryListen(0);
  if (port === undefined) throw new Error('could not find a free TCP port on 127.0.0.1');
  return port;
}
