import type { FastifyInstance, FastifyReply, FastifyRequest, onResponseHookHandler } from 'fastify';
import { Counter, Gauge, Registry, collectDefaultMetrics, type Metric } from 'prom-client';
import type { ShardKit } from '../kit/shard-kit.js';
import type { CacheStats, ShardErrorEvent } from '../kit/types.js';

const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

interface RouteEntry {
  method: string;
  route: string;
  /** Requests per status code. */
  statuses: Map<number, number>;
  /** Non-cumulative counts per bucket; the last slot is +Inf. */
  buckets: number[];
  sum: number;
  count: number;
}

/**
 * Request counts and latency per route, kept in plain numbers and turned into Prometheus
 * values only when scraped. prom-client's Counter/Histogram hash their labels on every
 * observation, which cost as much CPU as serving an object from its shard (bench/http).
 */
class RouteStats {
  private readonly routes = new Map<string, Map<string, RouteEntry>>();

  /** The entry of one route and method, created on first use. */
  entry(method: string, route: string): RouteEntry {
    let byMethod = this.routes.get(route);
    if (byMethod === undefined) this.routes.set(route, (byMethod = new Map()));
    let e = byMethod.get(method);
    if (e === undefined) byMethod.set(method, (e = { method, route, statuses: new Map(), buckets: new Array<number>(BUCKETS.length + 1).fill(0), sum: 0, count: 0 }));
    return e;
  }

  static record(e: RouteEntry, status: number, seconds: number): void {
    e.statuses.set(status, (e.statuses.get(status) ?? 0) + 1);
    let i = 0;
    while (i < BUCKETS.length && seconds > BUCKETS[i]!) i++;
    e.buckets[i]!++;
    e.sum += seconds;
    e.count++;
  }

  entries(): RouteEntry[] {
    return [...this.routes.values()].flatMap((m) => [...m.values()]);
  }

  /** The request counter and the latency histogram, computed from the plain numbers when scraped. */
  metrics(): [Metric, Metric] {
    const latency = 'shardkit_http_request_duration_seconds';
    return [
      scrapedMetric('shardkit_http_requests_total', 'HTTP requests by route and status', 'counter', () =>
        this.entries().flatMap((e) => [...e.statuses].map(([status, value]) => ({ labels: { method: e.method, route: e.route, status: String(status) }, value })))),
      scrapedMetric(latency, 'HTTP request latency by route', 'histogram', () =>
        this.entries().flatMap((e) => {
          let cumulative = 0;
          const out: MetricValue[] = e.buckets.map((n, i) => {
            cumulative += n;
            return { labels: { le: i < BUCKETS.length ? BUCKETS[i]! : '+Inf', method: e.method, route: e.route }, value: cumulative, metricName: `${latency}_bucket` };
          });
          out.push({ labels: { method: e.method, route: e.route }, value: e.sum, metricName: `${latency}_sum` });
          out.push({ labels: { method: e.method, route: e.route }, value: e.count, metricName: `${latency}_count` });
          return out;
        })),
    ];
  }
}

interface MetricValue {
  labels: Record<string, string | number>;
  value: number;
  metricName?: string;
}

/**
 * A metric in the shape prom-client's Registry formats (name, help, type, values), its values
 * computed at scrape time. Registry.registerMetric is typed for its own classes only, hence the cast.
 */
function scrapedMetric(name: string, help: string, type: 'counter' | 'histogram', values: () => MetricValue[]): Metric {
  const head = { name, help, type, aggregator: 'sum' };
  return { ...head, get: async () => ({ ...head, values: values() }) } as unknown as Metric;
}

export interface AppMetrics {
  registry: Registry;
  /**
   * A preHandler hook for the not-found handler: requests that match no route are counted as
   * route "unmatched" (the route hooks of installMetrics never see them).
   */
  countUnmatched: (request: FastifyRequest, reply: FastifyReply, done: () => void) => void;
}

/**
 * Prometheus metrics of one app, in its own registry (several apps can live in one process):
 * requests and latency per route, shard errors per host, the topology version in force.
 * Install before registering routes: each route gets its own onResponse hook, which holds its
 * stats entry. (An app-wide onResponse hook read `request.routeOptions`, which fastify builds as
 * a new object on every access; with the hook runner that cost ~3 us of a ~50 us GET: bench/http.)
 */
export function installMetrics(app: FastifyInstance, kit: ShardKit): AppMetrics {
  const registry = new Registry();
  // Under their standard names (process_cpu_seconds_total, nodejs_heap_size_used_bytes, ...):
  // the names Node dashboards and alerts expect (#33: shardkit_process_* matched none of them).
  collectDefaultMetrics({ register: registry });
  const stats = new RouteStats();
  for (const m of stats.metrics()) registry.registerMetric(m);
  const shardErrors = new Counter({
    name: 'shardkit_shard_errors_total',
    help: 'Storage failures by host, fleet and operation',
    labelNames: ['host', 'fleet', 'op'] as const,
    registers: [registry],
  });
  new Gauge({
    name: 'shardkit_topology_version',
    help: 'Version of the shard map this service routes with',
    registers: [registry],
    async collect() {
      this.set((await kit.shardMap()).version);
    },
  });

  // Read from the kit when scraped (the kit counts anyway); absent without a cache.
  const cacheCounters: Array<[keyof CacheStats, string, string]> = [
    ['hits', 'shardkit_cache_hits_total', 'Objects, list pages and counts answered by the cache'],
    ['misses', 'shardkit_cache_misses_total', 'Objects, list pages and counts read from the shards (cache miss or failed cache read)'],
    ['errors', 'shardkit_cache_errors_total', 'Failed cache calls (the read or write went on without the cache)'],
    ['fills', 'shardkit_cache_fills_total', 'Cache entries written after a miss'],
    ['skippedFills', 'shardkit_cache_skipped_fills_total', 'Fills dropped because a write invalidated the key meanwhile'],
    ['invalidations', 'shardkit_cache_invalidations_total', 'Cache keys invalidated after writes'],
  ];
  if (kit.cacheStats() !== undefined) {
    for (const [field, name, help] of cacheCounters) {
      registry.registerMetric(scrapedMetric(name, help, 'counter', () => [{ labels: {}, value: kit.cacheStats()?.[field] ?? 0 }]));
    }
  }

  const onShardError = (e: ShardErrorEvent) => shardErrors.inc({ host: e.host, fleet: e.fleet, op: e.op });
  kit.events.on('shard-error', onShardError);
  app.addHook('onClose', async () => {
    kit.events.off('shard-error', onShardError);
  });
  app.addHook('onRoute', (route) => {
    // The route pattern, not the URL: IDs must not become label values.
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const entries = new Map(methods.map((m) => [m, stats.entry(m, route.url)]));
    const only = methods.length === 1 ? entries.get(methods[0]!)! : undefined;
    const hook: onResponseHookHandler = (request, reply, done) => {
      const e = only ?? entries.get(request.method) ?? stats.entry(request.method, route.url);
      RouteStats.record(e, reply.statusCode, reply.elapsedTime / 1000);
      done();
    };
    route.onResponse = route.onResponse === undefined ? hook : [...[route.onResponse].flat(), hook];
  });
  return {
    registry,
    countUnmatched(request, reply, done) {
      reply.raw.once('finish', () => RouteStats.record(stats.entry(request.method, 'unmatched'), reply.statusCode, reply.elapsedTime / 1000));
      done();
    },
  };
}
