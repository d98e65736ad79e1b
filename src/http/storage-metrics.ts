import type { Registry } from 'prom-client';
import type { ShardKit } from '../kit/shard-kit.js';
import type { HostStorageMetrics } from '../storage/storage-metrics.js';
import { histogramValues, scrapedMetric, type MetricValue } from './scraped-metric.js';

const KINDS = ['read', 'write', 'batch'] as const;

/**
 * The storage side of /metrics, read from the backend's plain numbers when scraped (nothing on
 * the request path): statement latency per host and kind, and each host's connection pool.
 * Hosts appear once their pool is opened; an SQLite backend has none.
 */
export function registerStorageMetrics(registry: Registry, kit: ShardKit): void {
  const duration = 'shardkit_storage_duration_seconds';
  registry.registerMetric(scrapedMetric(duration, 'Storage latency per host and kind: read (one SELECT), write (one other statement), batch (a transaction, BEGIN to COMMIT)', 'histogram', () =>
    kit.storageMetrics().flatMap((h) => KINDS.flatMap((op) => histogramValues(duration, { host: h.host, op }, h.latency[op])))));
  const gauge = (name: string, help: string, value: (h: HostStorageMetrics) => number) =>
    registry.registerMetric(scrapedMetric(name, help, 'gauge', (): MetricValue[] => kit.storageMetrics().map((h) => ({ labels: { host: h.host }, value: value(h) }))));
  gauge('shardkit_storage_pool_connections_in_use', 'Connections of the host\'s pool checked out by a call', (h) => h.pool.inUse);
  gauge('shardkit_storage_pool_connections_idle', 'Open connections idle in the host\'s pool', (h) => h.pool.idle);
  gauge('shardkit_storage_pool_waiting', 'Calls waiting for a connection of the host\'s pool', (h) => h.pool.waiting);
}
