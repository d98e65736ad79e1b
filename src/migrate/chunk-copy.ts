import { ExponentialBackoff, handleWhen, retry } from 'cockatiel';
import { isShardKitError } from '../errors.js';
import { MAX_ROWS_PER_PUT, type Fleet, type ShardBackend, type ShardCopy, type ShardRef } from '../storage/shard-backend.js';
import type { ChunkState, MigrationState } from './migration-state.js';
import { chunkSum, type TableKind } from './table-kinds.js';

type Copier = ShardBackend & ShardCopy;

/** Rows read per scan call. */
const PAGE_ROWS = 1000;
/** A put batch stops at this many bytes of data too (objects can be large). */
const MAX_PUT_BYTES = 4 << 20;

export interface TableCopyContext {
  source: Copier;
  target: Copier;
  sourceRef: ShardRef;
  targetRef: ShardRef;
  fleet: Fleet;
  /** The table on the source and on the target (the same entity may have another table name there). */
  sourceTable: string;
  targetTable: string;
  state: MigrationState;
  /** Rows per chunk: the unit of change detection and of a re-copy. */
  chunkRows: number;
  /** Called before a chunk's target rows are read and written (KitMigrationOptions.onStep 'chunk-write'). */
  beforeChunk?: () => void | Promise<void>;
  /** Told about each retried chunk failure. */
  onRetry?: (err: unknown, attempt: number) => void;
}

/**
 * A chunk whose target I/O failed for a passing reason (a query timeout such as MariaDB's
 * PROTOCOL_SEQUENCE_TIMEOUT under load, a dropped connection, a failover: SHARD_UNAVAILABLE) is
 * synced again after a backoff instead of ending the run: syncChunk reads the target's rows anew
 * and writes only the difference, so a retry is safe whatever the failed attempt wrote. A missing
 * table or shard is not passing and fails at once.
 */
const transient = handleWhen((err) => isShardKitError(err, 'SHARD_UNAVAILABLE') && err.details?.missingTable !== true && !/does not exist|credentials/.test(err.message));
const CHUNK_ATTEMPTS = 8;

async function syncChunkRetried<R>(kind: TableKind<R>, ctx: TableCopyContext, lo: string | undefined, hi: string | undefined, rows: R[], encoded: string[]): Promise<{ upserts: number; deletes: number }> {
  const policy = retry(transient, { maxAttempts: CHUNK_ATTEMPTS - 1, backoff: new ExponentialBackoff({ initialDelay: 100, maxDelay: 5_000 }) });
  policy.onRetry((r) => ctx.onRetry?.('error' in r ? r.error : undefined, r.attempt));
  return policy.execute(async () => {
    await ctx.beforeChunk?.();
    return syncChunk(kind, ctx, lo, hi, rows, encoded);
  });
}

export interface TableCopyResult {
  rowsScanned: number;
  chunks: number;
  /** Chunks whose checksum differed from the last run's (or was unknown) and were compared with the target. */
  changedChunks: number;
  /** Rows written to the target (new or different) and removed from it (gone from the source). */
  upserts: number;
  deletes: number;
}

/**
 * Brings one table of one target shard up to the source: reads the whole source table in key
 * order (cheap: the source is the embedded store on this machine), checksums it chunk by chunk,
 * and only for chunks whose checksum changed since the last run reads the target's rows of that
 * key range and writes the difference (puts and deletes). Idempotent; safe to stop anywhere
 * (migration-state.ts says why).
 */
export async function copyTable<R>(kind: TableKind<R>, ctx: TableCopyContext): Promise<TableCopyResult> {
  const { state, fleet, sourceRef } = ctx;
  const shard = sourceRef.shard;
  const saved = state.chunks(fleet, shard, ctx.sourceTable);
  const old: ChunkState[] = saved.length > 0 ? saved : [{ end: undefined, sum: undefined }];
  const out: ChunkState[] = [];
  const result: TableCopyResult = { rowsScanned: 0, chunks: 0, changedChunks: 0, upserts: 0, deletes: 0 };
  let i = 0;
  let lo: string | undefined;
  let cur: R[] = [];

  const close = async (end: string | undefined, prevSum: string | undefined): Promise<void> => {
    const encoded = cur.map((r) => kind.encode(r));
    const sum = chunkSum(encoded);
    if (sum !== prevSum) {
      // Unknown from now until the target holds these rows: a kill -9 in between is caught next run.
      if (i < saved.length) state.markUnknown(fleet, shard, ctx.sourceTable, i);
      const d = await syncChunkRetried(kind, ctx, lo, end, cur, encoded);
      result.changedChunks++;
      result.upserts += d.upserts;
      result.deletes += d.deletes;
    }
    out.push({ end, sum });
    result.chunks++;
    lo = end;
    cur = [];
  };

  let after: string | undefined;
  for (;;) {
    const page = await kind.scan(ctx.source, sourceRef, ctx.sourceTable, after, PAGE_ROWS);
    for (const r of page) {
      const k = kind.key(r);
      while (old[i]!.end !== undefined && kind.compareKeys(k, old[i]!.end!) > 0) {
        await close(old[i]!.end, old[i]!.sum);
        i++;
      }
      cur.push(r);
      result.rowsScanned++;
      // The open-ended last chunk is cut every chunkRows rows; a chunk that grew to twice its
      // size is split (both parts are compared with the target once).
      if (cur.length >= ctx.chunkRows * (old[i]!.end === undefined ? 1 : 2)) await close(k, undefined);
    }
    if (page.length < PAGE_ROWS) break;
    after = kind.key(page[page.length - 1]!);
  }
  for (; i < old.length; i++) await close(old[i]!.end, old[i]!.sum);
  // Most tables of most rounds are unchanged: no write to the state then.
  const same = out.length === saved.length && out.every((c, n) => c.end === saved[n]!.end && c.sum === saved[n]!.sum);
  if (!same) state.saveChunks(fleet, shard, ctx.sourceTable, out);
  return result;
}

/** Makes the target's rows in (lo, hi] equal `rows`; returns what it wrote. */
async function syncChunk<R>(kind: TableKind<R>, ctx: TableCopyContext, lo: string | undefined, hi: string | undefined, rows: R[], encoded: string[]): Promise<{ upserts: number; deletes: number }> {
  const present = new Map<string, string>();
  let after = lo;
  for (let done = false; !done;) {
    const page = await kind.scan(ctx.target, ctx.targetRef, ctx.targetTable, after, PAGE_ROWS);
    for (const r of page) {
      const k = kind.key(r);
      if (hi !== undefined && kind.compareKeys(k, hi) > 0) {
        done = true;
        break;
      }
      present.set(k, kind.encode(r));
    }
    if (page.length < PAGE_ROWS) break;
    after = kind.key(page[page.length - 1]!);
  }
  const puts: R[] = [];
  const keep = new Set<string>();
  rows.forEach((r, n) => {
    const k = kind.key(r);
    keep.add(k);
    if (present.get(k) !== encoded[n]) puts.push(r);
  });
  const gone = [...present.keys()].filter((k) => !keep.has(k));
  let batch: R[] = [];
  let bytes = 0;
  for (let n = 0; n < puts.length; n++) {
    const r = puts[n]!;
    batch.push(r);
    bytes += kind.encode(r).length;
    if (batch.length >= MAX_ROWS_PER_PUT || bytes >= MAX_PUT_BYTES) {
      await kind.put(ctx.target, ctx.targetRef, ctx.targetTable, batch);
      batch = [];
      bytes = 0;
    }
  }
  if (batch.length > 0) await kind.put(ctx.target, ctx.targetRef, ctx.targetTable, batch);
  if (gone.length > 0) await kind.remove(ctx.target, ctx.targetRef, ctx.targetTable, gone);
  return { upserts: puts.length, deletes: gone.length };
}
