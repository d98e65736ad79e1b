import type { FastifyInstance, FastifyReply, FastifyRequest, onResponseHookHandler } from 'fastify';
import { Counter, Gauge, Registry, collectDefaultMetrics, type Metric } from 'prom-client';
import type { ShardKit } from '../kit/shard-kit.js';
import type { CacheStats, ShardErrorEvent } from '../kit/types.js';
import { LatencyHistogram } from '../util/latency-histogram.js';
import { histogramValues, scrapedMetric } from './scraped-metric.js';
import { registerStorageMetrics } from './storage-metrics.js';

interface RouteEntry {
  method: string;
  route: string;
  /** Requests per status code. */
  statuses: Map<number, number>;
  latency: LatencyHistogram;
}

/**
 * Request counts and latency per route, kept in plain numbers and turned into Prometheus
 * values only when scraped (LatencyHistogram says why).
 */
class RouteStats {
  private readonly routes = new Map<string, Map<string, RouteEntry>>();

  /** The entry of one route and method, created on first use. */
  entry(method: string, route: string): RouteEntry {
    let byMethod = this.routes.get(route);
    if (byMethod === undefined) this.routes.set(route, (byMethod = new Map()));
    let e = byMethod.get(method);
    if (e === undefined) byMethod.set(method, (e = { method, route, statuses: new Map(), latency: new LatencyHistogram() }));
    return e;
  }

  static record(e: RouteEntry, status: number, seconds: number): void {
    e.statuses.set(status, (e.statuses.get(status) ?? 0) + 1);
    e.latency.observe(seconds);
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
        this.entries().flatMap((e) => histogramValues(latency, { method: e.method, route: e.route }, e.latency))),
    ];
  }
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

  registerStorageMetrics(registry, kit);

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
