import { setTimeout as sleep } from 'node:timers/promises';
import { modShard } from '../../src/ids/mod-shard.js';

/**
 * Wide-column writers over HTTP for the fleet tests (MyRocks behind `shardkit serve`): each write
 * is one Batch Put Row of 3 rows that all live on one wide-column shard (a batch is one
 * transaction per shard, docs/widecolumn.md), each row with 2 columns. The ledger keeps every
 * batch that was attempted and whether it was acknowledged, so a check can ask for every
 * acknowledged cell and for each batch whole or absent.
 */
export interface WcBatch {
  rows: string[];
  value: string;
  acked: boolean;
  at: number;
}

export interface WcLedger {
  batches: WcBatch[];
  errors: Map<string, number>;
  /** Reads of an in-flight batch that saw part of it (must stay 0). */
  tornReads: string[];
  reads: number;
}

export const newWcLedger = (): WcLedger => ({ batches: [], errors: new Map(), tornReads: [], reads: 0 });

/** 3 row keys of writer w's n-th batch, all on one mod shard (chosen round-robin over `onShards`, default all `shards`). */
export function batchRows(w: number, n: number, shards: number, onShards?: readonly number[]): string[] {
  const target = onShards !== undefined ? onShards[(w + n) % onShards.length]! : (w + n) % shards;
  const out: string[] = [];
  for (let i = 0; out.length < 3; i++) {
    const row = `u${w}-${n}-${i}`;
    if (modShard(row, shards) === target) out.push(row);
  }
  return out;
}

const post = async (url: string, body: unknown): Promise<Response> => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

type RowJson = { row: string; columns: Array<{ column: string; cells: Array<{ value: string }> }> };

/** The values of columns c and d per row ('' when absent), read through a service. */
export async function readRows(url: string, dataset: string, rows: string[]): Promise<Map<string, { c: string; d: string }>> {
  const out = new Map<string, { c: string; d: string }>();
  for (let i = 0; i < rows.length; i += 50) {
    const res = await post(`${url}/v1/datasets/${dataset}/rows:batchGet`, { requests: rows.slice(i, i + 50).map((row) => ({ row })) });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`batchGet: ${res.status} ${text.slice(0, 200)}`);
    for (const r of (JSON.parse(text) as { results: RowJson[] }).results) {
      const v = (c: string) => r.columns.find((x) => x.column === c)?.cells[0]?.value ?? '';
      out.set(r.row, { c: v('c'), d: v('d') });
    }
  }
  return out;
}

/**
 * `writers` loops per service URL (urls() is read on every write: a restarted service has a new
 * port) until `until` resolves; a failed write is counted and a new batch is tried after a short
 * sleep (`onShards`: only rows on those wide-column shards). With `reader`, one more loop reads the batch writer 0 has in flight and records a torn read.
 */
export async function wcWriteLoad(urls: () => string[], dataset: string, shards: number, until: Promise<void>, options: { writers?: number; reader?: boolean; ledger?: WcLedger; onShards?: readonly number[] } = {}): Promise<WcLedger> {
  const ledger = options.ledger ?? newWcLedger();
  let stop = false;
  void until.then(() => (stop = true));
  const perService = options.writers ?? 2;
  const count = urls().length * perService;
  let inFlight: WcBatch | undefined;
  const writer = async (w: number): Promise<void> => {
    for (let n = 0; !stop; n++) {
      const url = urls()[w % urls().length]!;
      const value = `${w}:${n}`;
      const batch: WcBatch = { rows: batchRows(w, n, shards, options.onShards), value, acked: false, at: 0 };
      ledger.batches.push(batch);
      if (w === 0) inFlight = batch;
      let code: string;
      try {
        const res = await post(`${url}/v1/datasets/${dataset}/rows:batchPut`, { rows: batch.rows.map((row) => ({ row, items: [{ column: 'c', value }, { column: 'd', value }] })) });
        const body = await res.text();
        if (res.status === 200) {
          batch.acked = true;
          batch.at = Date.now();
          continue;
        }
        code = `${res.status} ${body.slice(0, 100)}`;
      } catch (err) {
        code = (err as Error).message;
      }
      ledger.errors.set(code, (ledger.errors.get(code) ?? 0) + 1);
      await sleep(20);
    }
  };
  const reader = async (): Promise<void> => {
    while (!stop) {
      const b = inFlight;
      if (b === undefined) {
        await sleep(10);
        continue;
      }
      try {
        const got = await readRows(urls()[0]!, dataset, b.rows);
        ledger.reads++;
        const seen = b.rows.map((r) => got.get(r)!);
        const whole = seen.every((x) => x.c === b.value && x.d === b.value);
        const none = seen.every((x) => x.c === '' && x.d === '');
        if (!whole && !none) ledger.tornReads.push(`${b.value}: ${JSON.stringify(seen)}`);
      } catch {
        await sleep(20);
      }
    }
  };
  await Promise.all([...Array.from({ length: count }, (_, w) => writer(w)), ...(options.reader ? [reader()] : [])]);
  return ledger;
}

/** Acknowledged batches missing a cell, and attempted batches present in part, read through `url`. */
export async function checkBatches(url: string, dataset: string, batches: WcBatch[]): Promise<{ lost: string[]; torn: string[]; acked: number }> {
  const got = await readRows(url, dataset, batches.flatMap((b) => b.rows));
  const lost: string[] = [];
  const torn: string[] = [];
  for (const b of batches) {
    const seen = b.rows.map((r) => got.get(r)!);
    const whole = seen.every((x) => x.c === b.value && x.d === b.value);
    const none = seen.every((x) => x.c === '' && x.d === '');
    if (b.acked && !whole) lost.push(b.value);
    else if (!whole && !none) torn.push(`${b.value}: ${JSON.stringify(seen)}`);
  }
  return { lost, torn, acked: batches.filter((b) => b.acked).length };
}

/** Resolves once a batch was acknowledged after `since`. */
export async function wcAckedAfter(ledger: WcLedger, since: number, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!ledger.batches.some((b) => b.acked && b.at > since)) {
    if (Date.now() > deadline) throw new Error(`no wide-column write was acknowledged within ${timeoutMs} ms after ${new Date(since).toISOString()}; errors: ${JSON.stringify([...ledger.errors].slice(0, 5))}`);
    await sleep(50);
  }
}
