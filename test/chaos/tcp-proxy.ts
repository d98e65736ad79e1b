/**
 * A TCP proxy in front of a server, for network faults without root: each direction can be passed,
 * delayed (with jitter and loss, order kept), black-holed (held, not delivered, until the mode
 * changes) or reset (every connection cut, new ones refused). Chaos runs put one in front of each
 * server that services reach, and one on a server's unix socket for the supervisor's path to it
 * (test/chaos/chaos-fleet.ts). A lost segment on TCP is a late one (retransmitted), never a hole:
 * loss delays a chunk by a retransmission timeout.
 */
import net from 'node:net';

export type ProxyMode =
  | { kind: 'pass' }
  | { kind: 'delay'; ms: number; jitterMs: number; loss?: number }
  | { kind: 'blackhole' }
  | { kind: 'reset' };

/** Linux's minimum TCP retransmission timeout: when a lost segment arrives after all. */
const RETRANSMIT_MS = 200;

interface Direction {
  /** When the last chunk was (or will be) delivered: a delayed chunk never overtakes an earlier one. */
  lastDue: number;
  held: Buffer[];
  to: net.Socket;
}

interface Link {
  a: net.Socket;
  b: net.Socket;
  dirs: Direction[];
}

export class TcpProxy {
  private modeNow: ProxyMode = { kind: 'pass' };
  private readonly links = new Set<Link>();

  private constructor(private readonly server: net.Server, readonly port: number, private readonly random: () => number) {}

  /** A proxy to `target` (a loopback port or a unix socket path), listening on a free loopback port or on the socket path `listen`. */
  static async start(target: number | string, random: () => number = Math.random, listen?: string): Promise<TcpProxy> {
    let proxy!: TcpProxy;
    const server = net.createServer((client) => proxy.accept(client, target));
    await new Promise<void>((resolve) => (listen !== undefined ? server.listen(listen, resolve) : server.listen(0, '127.0.0.1', resolve)));
    proxy = new TcpProxy(server, listen !== undefined ? 0 : (server.address() as net.AddressInfo).port, random);
    return proxy;
  }

  get mode(): ProxyMode {
    return this.modeNow;
  }

  set mode(mode: ProxyMode) {
    this.modeNow = mode;
    for (const link of [...this.links]) {
      if (mode.kind === 'reset') this.cut(link);
      else if (mode.kind !== 'blackhole') for (const d of link.dirs) this.flush(d);
    }
  }

  /** Connections open through the proxy now. */
  get connections(): number {
    return this.links.size;
  }

  async close(): Promise<void> {
    for (const link of [...this.links]) this.cut(link);
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: net.Socket, target: number | string): void {
    if (this.modeNow.kind === 'reset') {
      client.destroy();
      return;
    }
    const upstream = typeof target === 'number' ? net.connect(target, '127.0.0.1') : net.connect(target);
    const dirs: Direction[] = [{ lastDue: 0, held: [], to: upstream }, { lastDue: 0, held: [], to: client }];
    const link: Link = { a: client, b: upstream, dirs };
    this.links.add(link);
    client.on('data', (chunk: Buffer) => this.forward(dirs[0]!, chunk));
    upstream.on('data', (chunk: Buffer) => this.forward(dirs[1]!, chunk));
    const end = () => this.cut(link);
    for (const s of [client, upstream]) {
      s.on('error', end);
      s.on('close', end);
    }
  }

  private forward(d: Direction, chunk: Buffer): void {
    const mode = this.modeNow;
    if (mode.kind === 'blackhole' || d.held.length > 0) {
      d.held.push(chunk);
      if (mode.kind !== 'blackhole') this.flush(d);
      return;
    }
    if (mode.kind === 'delay') {
      const lost = mode.loss !== undefined && this.random() < mode.loss;
      const due = Math.max(Date.now() + mode.ms + this.random() * mode.jitterMs + (lost ? RETRANSMIT_MS : 0), d.lastDue);
      d.lastDue = due;
      setTimeout(() => d.to.destroyed || d.to.write(chunk), due - Date.now());
      return;
    }
    if (!d.to.destroyed) d.to.write(chunk);
  }

  private flush(d: Direction): void {
    const chunks = d.held.splice(0);
    for (const c of chunks) this.forward(d, c);
  }

  private cut(link: Link): void {
    if (!this.links.delete(link)) return;
    link.a.destroy();
    link.b.destroy();
  }
}
