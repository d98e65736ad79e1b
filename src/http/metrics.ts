import type { FastifyInstance } from 'fastify';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { ShardKit } from '../store/shard-kit.js';
import type { ShardErrorEvent } from '../store/types.js';

/**
 * Prometheus metrics of one app, in its own registry (several apps can live in one process):
 * requests and latency per route, shard errors per host, the topology version in force.
 */
export function installMetrics(app: FastifyInstance, kit: ShardKit): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'shardkit_' });
  const requests = new Counter({
    name: 'shardkit_http_requests_total',
    help: 'HTTP requests by route and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
  });
  const latency = new Histogram({
    name: 'shardkit_http_request_duration_seconds',
    help: 'HTTP request latency by route',
    labelNames: ['method', 'route'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
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

  const onShardError = (e: ShardErrorEvent) => shardErrors.inc({ host: e.host, fleet: e.fleet, op: e.op });
  kit.events.on('shard-error', onShardError);
  app.addHook('onClose', async () => {
    kit.events.off('shard-error', onShardError);
  });
  // Label children are looked up once per (route, method, status): prom-client hashes label
  // objects on every call otherwise, which costs as much as serving the object.
  const children = new Map<string, Map<string, { latency: ReturnType<typeof latency.labels>; counts: Map<number, ReturnType<typeof requests.labels>> }>>();
  app.addHook('onResponse', (request, reply, done) => {
    // The route pattern, not the URL: IDs must not become label values.
    const route = request.routeOptions.url ?? 'unmatched';
    let byMethod = children.get(route);
    if (byMethod === undefined) children.set(route, (byMethod = new Map()));
    let entry = byMethod.get(request.method);
    if (entry === undefined) byMethod.set(request.method, (entry = { latency: latency.labels(request.method, route), counts: new Map() }));
    let count = entry.counts.get(reply.statusCode);
    if (count === undefined) entry.counts.set(reply.statusCode, (count = requests.labels(request.method, route, String(reply.statusCode))));
    count.inc();
    entry.latency.observe(reply.elapsedTime / 1000);
    done();
  });
  return registry;
}
