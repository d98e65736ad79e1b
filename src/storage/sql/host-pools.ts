import { ShardKitError } from '../../errors.js';
import type { HostStorageMetrics } from '../storage-metrics.js';

/** The counters every host pool keeps. */
export interface CountingPool {
  queries: number;
  inFlight: number;
  maxInFlight: number;
  close(): Promise<void>;
  /** Pool gauges and latency histograms, for /metrics (server pools). */
  metrics?(): HostStorageMetrics;
}

/** One pool per declared host, created on first use; counters for benchmarks and tests. */
export class HostPools<P extends CountingPool, A> {
  private readonly pools = new Map<string, P>();
  private readonly hosts: Map<string, A>;

  constructor(
    hosts: Record<string, A>,
    private readonly create: (host: string, address: A) => P,
  ) {
    this.hosts = new Map(Object.entries(hosts));
  }

  /**
   * The pool of `host`. A host this process was not told about is HOST_UNKNOWN, a retryable 503:
   * the map can name a pair added after the service started (`dev add-pair` then a move), and the
   * kit learns it from the config again (learn) before it gives up.
   */
  get(host: string): P {
    let pool = this.pools.get(host);
    if (pool) return pool;
    const address = this.hosts.get(host);
    if (!address) throw new ShardKitError('HOST_UNKNOWN', `host ${host} is not declared in this service's config "hosts" (a pair added after it started?)`, { details: { host } });
    pool = this.create(host, address);
    this.pools.set(host, pool);
    return pool;
  }

  has(host: string): boolean {
    return this.hosts.has(host);
  }

  /** Adds the hosts not known yet; a known host keeps its address (its pool may be in use). Returns the names added. */
  learn(hosts: Record<string, A>): string[] {
    const added: string[] = [];
    for (const [name, address] of Object.entries(hosts)) {
      if (this.hosts.has(name)) continue;
      this.hosts.set(name, address);
      added.push(name);
    }
    return added;
  }

  /** Round trips sent to each host since creation. */
  roundTrips(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [name, pool] of this.pools) out[name] = pool.queries;
    return out;
  }

  /** Per host: round trips and the most statements in flight at once since the last reset. */
  stats(options: { reset?: boolean } = {}): Record<string, { queries: number; maxInFlight: number }> {
    const out: Record<string, { queries: number; maxInFlight: number }> = {};
    for (const [name, pool] of this.pools) {
      out[name] = { queries: pool.queries, maxInFlight: pool.maxInFlight };
      if (options.reset) {
        pool.queries = 0;
        pool.maxInFlight = pool.inFlight;
      }
    }
    return out;
  }

  /** Each opened host's pool gauges and latency histograms. */
  metrics(): HostStorageMetrics[] {
    const out: HostStorageMetrics[] = [];
    for (const pool of this.pools.values()) if (pool.metrics !== undefined) out.push(pool.metrics());
    return out;
  }

  async closeAll(): Promise<void> {
    const pools = [...this.pools.values()];
    this.pools.clear();
    await Promise.all(pools.map((p) => p.close()));
  }
}

