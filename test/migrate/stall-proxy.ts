import { connect, createServer, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy of our own in front of a database server, on 127.0.0.1: it forwards both ways until
 * `stallNext()` is called, then holds the next client-to-server packet of any connection for good
 * (the server never sees the query, as with a frozen server or a lost network), so the client's
 * query timeout fires (MariaDB's PROTOCOL_SEQUENCE_TIMEOUT, pg's query_timeout). Later packets and
 * connections go through again.
 */
export class StallProxy {
  stalled = 0;
  private armed = false;
  private readonly sockets = new Set<Socket>();

  private constructor(private readonly server: Server, readonly port: number) {}

  static async start(host: string, port: number): Promise<StallProxy> {
    let proxy: StallProxy | undefined;
    const server = createServer((client) => {
      const upstream = connect(port, host);
      const p = proxy!;
      for (const s of [client, upstream]) {
        p.sockets.add(s);
        s.on('close', () => p.sockets.delete(s));
        s.on('error', () => undefined);
      }
      let held = false;
      client.on('data', (chunk) => {
        if (held) return;
        if (p.armed) {
          p.armed = false;
          p.stalled++;
          held = true;
          return;
        }
        upstream.write(chunk);
      });
      upstream.on('data', (chunk) => client.write(chunk));
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    proxy = new StallProxy(server, typeof address === 'object' && address !== null ? address.port : 0);
    return proxy;
  }

  stallNext(): void {
    this.armed = true;
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
