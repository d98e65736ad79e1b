import { ShardKitError } from '../../errors.js';

/** The counters every host pool keeps. */
export interface CountingPool {
  queries: number;
  inFlight: number;
  maxInFlight: number;
  close(): Promise<void>;
}

/** One pool per declared host, created on first use; counters for benchmarks and tests. */
export class HostPools<P extends CountingPool, A> {
  private readonly pools = new Map<string, P>();

  constructor(
    private readonly hosts: Record<string, A>,
    private readonly create: (host: string, address: A) => P,
  ) {}

  get(host: string): P {
    let pool = this.pools.get(host);
    if (pool) return pool;
    const address = Object.hasOwn(this.hosts, host) ? this.hosts[host] : undefined;
    if (!address) throw new ShardKitError('INVALID_CONFIG', `host ${host} is not declared in config "hosts"`);
    pool = this.create(host, address);
    this.pools.set(host, pool);
    return pool;
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

  async closeAll(): Promise<void> {
    const pools = [...this.pools.values()];
    this.pools.clear();
    await Promise.all(pools.map((p) => p.close()));
  }
}

