import { LatencyHistogram } from '../util/latency-histogram.js';
import type { WideColumnEngine } from './engine.js';

/** The engine's operations as /metrics labels them: a batch form counts under its single form. */
export const WIDECOLUMN_OPS = ['get', 'put', 'delete', 'compact', 'backup', 'export'] as const;
export type WideColumnOp = (typeof WIDECOLUMN_OPS)[number];

export interface WideColumnOpStats {
  /** Calls, from the call to its answer (a batch is one call). */
  latency: LatencyHistogram;
  /** Calls that failed (bad input included: the engine checks it). */
  errors: number;
  /** Rows asked for (get), written (put) or deleted from (delete): a batch counts each of its rows. */
  rows: number;
}

/** An engine's counters since it was wrapped, read when /metrics is scraped. */
export interface WideColumnMetrics {
  readonly engine: string;
  readonly ops: Readonly<Record<WideColumnOp, WideColumnOpStats>>;
}

/** A batch's row count; a wrong argument counts 0 and the engine refuses it. */
function size(list: unknown): number {
  return Array.isArray(list) ? list.length : 0;
}

/**
 * `engine` with every row operation and long operation timed and counted in plain numbers
 * (WideColumnMetrics); everything else passes through. A wrapper rather than counters inside each
 * engine: the RocksDB and MyRocks engines get the same metrics from one place.
 */
export function measuredEngine(engine: WideColumnEngine): { engine: WideColumnEngine; metrics: WideColumnMetrics } {
  const ops = Object.fromEntries(WIDECOLUMN_OPS.map((op) => [op, { latency: new LatencyHistogram(), errors: 0, rows: 0 }])) as Record<WideColumnOp, WideColumnOpStats>;
  const measure = <T>(op: WideColumnOp, rows: number, call: () => Promise<T>): Promise<T> => {
    const stats = ops[op];
    const started = performance.now();
    stats.rows += rows;
    const done = () => stats.latency.observe((performance.now() - started) / 1000);
    let pending: Promise<T>;
    try {
      pending = call();
    } catch (err) {
      // A synchronous refusal is a failed call too.
      pending = Promise.reject(err);
    }
    return pending.then((value) => {
      done();
      return value;
    }, (err: unknown) => {
      done();
      stats.errors++;
      throw err;
    });
  };
  const measured: WideColumnEngine = {
    get kind() { return engine.kind; },
    get limits() { return engine.limits; },
    get closed() { return engine.closed; },
    listDatasets: () => engine.listDatasets(),
    getDataset: (name) => engine.getDataset(name),
    putDataset: (name, settings) => engine.putDataset(name, settings),
    getRow: (dataset, row, options) => measure('get', 1, () => engine.getRow(dataset, row, options)),
    batchGetRows: (dataset, requests) => measure('get', size(requests), () => engine.batchGetRows(dataset, requests)),
    putRow: (dataset, row, items) => measure('put', 1, () => engine.putRow(dataset, row, items)),
    batchPutRows: (dataset, rows) => measure('put', size(rows), () => engine.batchPutRows(dataset, rows)),
    deleteRow: (dataset, row, columns) => measure('delete', 1, () => engine.deleteRow(dataset, row, columns)),
    batchDeleteRows: (dataset, rows) => measure('delete', size(rows), () => engine.batchDeleteRows(dataset, rows)),
    compact: (options) => measure('compact', 0, () => engine.compact(options)),
    backup: (dir, options) => measure('backup', 0, () => engine.backup(dir, options)),
    exportParquet: (dataset, file, options) => measure('export', 0, () => engine.exportParquet(dataset, file, options)),
    close: () => engine.close(),
  };
  return { engine: measured, metrics: { get engine() { return engine.kind; }, ops } };
}
