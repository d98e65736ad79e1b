import type { Metric } from 'prom-client';
import { LATENCY_BUCKETS, type LatencyHistogram } from '../util/latency-histogram.js';

export interface MetricValue {
  labels: Record<string, string | number>;
  value: number;
  metricName?: string;
}

/**
 * A metric in the shape prom-client's Registry formats (name, help, type, values), its values
 * computed at scrape time from numbers kept elsewhere. Registry.registerMetric is typed for its
 * own classes only, hence the cast.
 */
export function scrapedMetric(name: string, help: string, type: 'counter' | 'gauge' | 'histogram', values: () => MetricValue[]): Metric {
  const head = { name, help, type, aggregator: 'sum' };
  return { ...head, get: async () => ({ ...head, values: values() }) } as unknown as Metric;
}

/** The _bucket (cumulative), _sum and _count values of one labelled series of histogram `name`. */
export function histogramValues(name: string, labels: Record<string, string>, h: LatencyHistogram): MetricValue[] {
  let cumulative = 0;
  const out: MetricValue[] = h.buckets.map((n, i) => {
    cumulative += n;
    return { labels: { le: i < LATENCY_BUCKETS.length ? LATENCY_BUCKETS[i]! : '+Inf', ...labels }, value: cumulative, metricName: `${name}_bucket` };
  });
  out.push({ labels, value: h.sum, metricName: `${name}_sum` });
  out.push({ labels, value: h.count, metricName: `${name}_count` });
  return out;
}
