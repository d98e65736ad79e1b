import type { Registry } from 'prom-client';
import type { TicketClient } from '../tickets/ticket-client.js';
import { WIDECOLUMN_OPS, type WideColumnMetrics } from '../widecolumn/engine-metrics.js';
import { histogramValues, scrapedMetric } from './scraped-metric.js';

/** The wide-column engine's calls on /metrics, per operation (a batch counts under its single form). */
export function registerWideColumnMetrics(registry: Registry, m: WideColumnMetrics): void {
  const duration = 'shardkit_widecolumn_duration_seconds';
  const per = (value: (op: (typeof WIDECOLUMN_OPS)[number]) => number) => () => WIDECOLUMN_OPS.map((op) => ({ labels: { engine: m.engine, op }, value: value(op) }));
  registry.registerMetric(scrapedMetric(duration, 'Wide-column engine calls by operation: get, put, delete (single and batch forms), compact, backup, export', 'histogram', () =>
    WIDECOLUMN_OPS.flatMap((op) => histogramValues(duration, { engine: m.engine, op }, m.ops[op].latency))));
  registry.registerMetric(scrapedMetric('shardkit_widecolumn_errors_total', 'Wide-column engine calls that failed, by operation', 'counter', per((op) => m.ops[op].errors)));
  registry.registerMetric(scrapedMetric('shardkit_widecolumn_rows_total', 'Rows read, written or deleted from by the wide-column engine, by operation', 'counter', per((op) => m.ops[op].rows)));
}

/** The ticket client on /metrics: IDs issued per sequence, and each ticket server's health and round trips. */
export function registerTicketMetrics(registry: Registry, client: TicketClient): void {
  const duration = 'shardkit_ticket_server_duration_seconds';
  registry.registerMetric(scrapedMetric('shardkit_tickets_issued_total', 'IDs issued by this service per sequence', 'counter', () =>
    client.metrics().issued.map((s) => ({ labels: { sequence: s.sequence }, value: s.ids }))));
  registry.registerMetric(scrapedMetric(duration, 'Round trips to each ticket server (waiting for a connection included)', 'histogram', () =>
    client.metrics().servers.flatMap((s) => histogramValues(duration, { server: s.server }, s.latency))));
  registry.registerMetric(scrapedMetric('shardkit_ticket_server_errors_total', 'Failed round trips to each ticket server', 'counter', () =>
    client.metrics().servers.map((s) => ({ labels: { server: s.server }, value: s.errors }))));
  registry.registerMetric(scrapedMetric('shardkit_ticket_server_up', 'Whether this service routes to the ticket server (0 after a failure, until its retry)', 'gauge', () =>
    client.metrics().servers.map((s) => ({ labels: { server: s.server }, value: s.up ? 1 : 0 }))));
}
