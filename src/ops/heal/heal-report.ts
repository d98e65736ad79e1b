import { createServer, type Server } from 'node:http';
import { Counter, Gauge, Registry } from 'prom-client';
import type { HealDecision } from './heal-supervisor.js';

/**
 * Where a supervisor's decisions go besides its JSON lines: Prometheus counters and each pair's
 * state (`--metrics-port`: GET /metrics, GET /status), and an operator's webhook (`--webhook`),
 * so a failover at night pages someone with its evidence. A webhook that is down never slows the
 * supervisor: posts are queued, tried 3 times, then dropped with a log line.
 */
export class HealReporter {
  readonly registry = new Registry();
  private readonly decisions = new Counter({ name: 'shardkit_heal_decisions_total', help: 'Decisions by verdict (reported when a pair\'s verdict changes; failovers and rebuilds always)', labelNames: ['verdict'], registers: [this.registry] });
  private readonly failovers = new Counter({ name: 'shardkit_heal_failovers_total', help: 'Emergency failovers run by this supervisor, by outcome', labelNames: ['outcome'], registers: [this.registry] });
  private readonly pairUp = new Gauge({ name: 'shardkit_heal_pair_healthy', help: '1 when the pair\'s master answered the last probe, else 0', labelNames: ['master', 'slave'], registers: [this.registry] });
  private readonly acting = new Gauge({ name: 'shardkit_heal_acting', help: '1 when this supervisor holds the lease and may act', registers: [this.registry] });
  private readonly last = new Map<string, HealDecision>();
  private queue: Promise<void> = Promise.resolve();
  private server: Server | undefined;

  constructor(private readonly options: { webhook?: string; log?: (m: string) => void; fetchImpl?: typeof fetch } = {}) {}

  decision(d: HealDecision): void {
    this.decisions.inc({ verdict: d.verdict });
    if (d.verdict === 'failover') this.failovers.inc({ outcome: d.error === undefined ? 'done' : 'failed' });
    this.last.set(d.master, d);
    if (this.options.webhook !== undefined) this.post(d);
  }

  /** Every round's view of a pair, reported or not. */
  pairState(master: string, slave: string, healthy: boolean): void {
    this.pairUp.set({ master, slave }, healthy ? 1 : 0);
  }

  setActing(acting: boolean): void {
    this.acting.set(acting ? 1 : 0);
  }

  /** Serves /metrics and /status on 127.0.0.1:port (0: a free one); resolves to the port. */
  async listen(port: number): Promise<number> {
    this.server = createServer((req, res) => {
      void (async () => {
        if (req.method === 'GET' && req.url === '/metrics') {
          res.writeHead(200, { 'content-type': this.registry.contentType });
          res.end(await this.registry.metrics());
        } else if (req.method === 'GET' && req.url === '/status') {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ pairs: [...this.last.values()].map((d) => ({ master: d.master, slave: d.slave, verdict: d.verdict, at: d.at, ...(d.reason !== undefined ? { reason: d.reason } : {}), ...(d.error !== undefined ? { error: d.error } : {}) })) }));
        } else {
          res.writeHead(404, { 'content-type': 'application/json' });
          res.end('{"error":{"code":"NOT_FOUND","message":"GET /metrics or /status"}}');
        }
      })().catch(() => res.destroy());
    });
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(port, '127.0.0.1', () => resolve());
    });
    return (this.server.address() as { port: number }).port;
  }

  /** Waits for queued webhook posts, closes the metrics server. */
  async close(): Promise<void> {
    await this.queue;
    await new Promise<void>((resolve) => (this.server === undefined ? resolve() : this.server.close(() => resolve())));
  }

  private post(d: HealDecision): void {
    const send = this.options.fetchImpl ?? fetch;
    this.queue = this.queue.then(async () => {
      let last = '';
      for (let attempt = 1; attempt <= 3; attempt++) {
        try {
          const res = await send(this.options.webhook!, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(d), signal: AbortSignal.timeout(5000) });
          if (res.ok) return;
          last = `HTTP ${res.status}`;
        } catch (err) {
          last = (err as Error).message;
        }
        await new Promise((r) => setTimeout(r, 200 * attempt));
      }
      this.options.log?.(`webhook ${this.options.webhook}: dropped the ${d.verdict} decision of ${d.master} after 3 tries (${last})`);
    });
  }
}
