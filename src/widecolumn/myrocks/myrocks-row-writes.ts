import { type SqlValue } from '../../storage/mysql/index.js';
import type { DatasetConfig } from '../dataset-config.js';
import { TimestampOracle } from '../timestamp-oracle.js';
import type { DeleteRowRequest, PutItem, PutRowRequest, PutRowResult } from '../types.js';
import { datasetTable, HEAD_NTS, NEVER_EXPIRES } from './myrocks-ddl.js';
import { checkBatch, validateDeletes, validatePuts, type ValidPut } from './myrocks-requests.js';
import { cellKey, headKey, type CellRow } from './myrocks-routing.js';
import { MyrocksRowReads } from './myrocks-row-reads.js';

/** Put Row and Delete Row and their batches: one statement per shard; stamp() gives the cells their timestamps. */
export class MyrocksRowWrites extends MyrocksRowReads {
  /**
   * A row's server timestamps strictly increase inside this process, as in the embedded engine
   * (the same oracle): two puts to one row in one millisecond, or after the clock went back, never
   * share a (column, timestamp) key, so neither replaces the other's version.
   */
  private readonly stamps = new TimestampOracle(() => this.clock(), 0, 0);

  putRow(dataset: string, row: string, items: PutItem[]): Promise<PutRowResult> {
    return this.batchPutRows(dataset, [{ row, items }]).then((r) => r[0]!);
  }

  /** One INSERT per shard touched (atomic per shard), shards in parallel. */
  batchPutRows(dataset: string, rows: PutRowRequest[]): Promise<PutRowResult[]> {
    return this.track(async () => {
      const ds = await this.catalog.get(dataset);
      checkBatch(rows, this.limits);
      const now = this.clock();
      const valid = validatePuts(rows, this.limits, now + this.limits.maxFutureSkewMs);
      const { results, cells } = this.stamp(ds, valid, now);
      const byShard = new Map<number, SqlValue[][]>();
      for (const c of cells) {
        let list = byShard.get(c.shard);
        if (!list) byShard.set(c.shard, (list = []));
        list.push(c.values);
      }
      await Promise.all([...byShard].map(([shard, list]) => this.writeShardStatements(shard, statementPieces(list).map((piece) => ({
        // Cells overwrite; a head record takes the put's cell only when it is at least as new
        // (assignments run left to right: v and exp compare with the old hts).
        sql: `INSERT INTO ${datasetTable(shard, ds.name)} (rh, col, nts, row_key, v, exp, hts) VALUES ${piece.map(() => '(?, ?, ?, ?, ?, ?, ?)').join(', ')}
         ON DUPLICATE KEY UPDATE v = IF(nts = ${HEAD_NTS} AND VALUES(hts) < hts, v, VALUES(v)), exp = IF(nts = ${HEAD_NTS} AND VALUES(hts) < hts, exp, VALUES(exp)), hts = GREATEST(hts, VALUES(hts))`,
        values: piece.flat(),
      })))));
      return results;
    });
  }

  /**
   * Server timestamps (clock time; repeats of a column in one call get consecutive ones, later
   * item newer) and each cell's MyRocks expiry. The expiry is in the server's time: the cell's
   * remaining life by our clock, added to the wall clock, rounded up, plus a second, so MyRocks
   * never drops a cell before reads stop returning it (an injected test clock keeps working too).
   */
  protected stamp(ds: DatasetConfig, puts: ValidPut[], now: number): { results: PutRowResult[]; cells: CellRow[] } {
    const results: PutRowResult[] = [];
    const cells: CellRow[] = [];
    const wall = Date.now();
    for (const p of puts) {
      const shard = this.shardOf(p.row);
      const rh = cellKey(p.rowRaw);
      const hh = headKey(p.rowRaw);
      const repeats = new Map<string, number>();
      // As many consecutive server timestamps as the most repeated server-stamped column needs.
      const need = new Map<string, number>();
      for (const it of p.items) if (it.ts === null) need.set(it.column, (need.get(it.column) ?? 0) + 1);
      const base = need.size === 0 ? now : this.stamps.reserve(`${ds.name}\u0000${p.row}`, Math.max(...need.values()));
      let server = false;
      const seen = new Map<string, number>();
      const heads = new Map<string, SqlValue[]>();
      for (const it of p.items) {
        let ts = it.ts;
        if (ts === null) {
          server = true;
          const n = (repeats.get(it.column) ?? -1) + 1;
          repeats.set(it.column, n);
          ts = base + n;
        }
        const exp = ds.ttlSeconds > 0 ? BigInt(Math.ceil((wall + ts + ds.ttlSeconds * 1000 - now) / 1000) + 1) : NEVER_EXPIRES;
        // The same (column, timestamp) twice in one call: the later item wins, as one INSERT would not allow.
        const key = `${it.column}\u0000${ts}`;
        const at = seen.get(key);
        const values: SqlValue[] = [rh, it.colRaw, -ts, p.rowRaw, it.value, exp < 1n ? 1n : exp, 0];
        if (at !== undefined) cells[at] = { shard, values };
        else {
          seen.set(key, cells.length);
          cells.push({ shard, values });
        }
        const head = heads.get(it.column);
        if (!head || (head[6] as number) <= ts) heads.set(it.column, [hh, it.colRaw, HEAD_NTS, p.rowRaw, it.value, values[5]!, ts]);
      }
      for (const values of heads.values()) cells.push({ shard, values });
      results.push({ row: p.row, timestamp: server ? base : null });
    }
    return { results, cells };
  }

  deleteRow(dataset: string, row: string, columns?: string[]): Promise<void> {
    return this.batchDeleteRows(dataset, [columns === undefined ? { row } : { row, columns }]);
  }

  /** One DELETE per shard touched (atomic per shard). */
  batchDeleteRows(dataset: string, rows: DeleteRowRequest[]): Promise<void> {
    return this.track(async () => {
      const ds = await this.catalog.get(dataset);
      checkBatch(rows, this.limits);
      const valid = validateDeletes(rows, this.limits);
      const byShard = new Map<number, { where: string[]; values: SqlValue[] }>();
      for (const d of valid) {
        const shard = this.shardOf(d.row);
        let w = byShard.get(shard);
        if (!w) byShard.set(shard, (w = { where: [], values: [] }));
        // Cells and head records in one statement.
        if (d.columns === null) {
          w.where.push('rh IN (?, ?)');
          w.values.push(cellKey(d.rowRaw), headKey(d.rowRaw));
        } else {
          w.where.push(`(rh IN (?, ?) AND col IN (${d.columns.map(() => '?').join(', ')}))`);
          w.values.push(cellKey(d.rowRaw), headKey(d.rowRaw), ...d.columns);
        }
      }
      await Promise.all([...byShard].map(([shard, w]) => this.writeShard(shard, `DELETE FROM ${datasetTable(shard, ds.name)} WHERE ${w.where.join(' OR ')}`, w.values)));
    });
  }

  // ---- compaction -----------------------------------------------------------------------------
}

/**
 * Bytes of SQL one INSERT may carry. mysql2 writes the parameters into the statement's text
 * (bytes as hex: twice their size) and each value goes in twice (its cell and its column's head),
 * so a batch of 4 MiB of values was a 16 MiB statement, past MariaDB's default max_allowed_packet:
 * 413 within the documented 16 MiB batch (and a server that drops the connection instead reads as
 * a host down). Bigger batches go as several statements in one transaction.
 */
export const STATEMENT_BYTES = 8 * 1024 * 1024;

function sqlBytes(v: SqlValue): number {
  if (Buffer.isBuffer(v)) return 2 * v.length + 3;
  if (typeof v === 'string') return 2 * Buffer.byteLength(v) + 2;
  return 24;
}

/** `rows` in runs of at most STATEMENT_BYTES of SQL (a row alone may be more: it cannot be split). */
export function statementPieces(rows: SqlValue[][]): SqlValue[][][] {
  const pieces: SqlValue[][][] = [];
  let piece: SqlValue[][] = [];
  let bytes = 0;
  for (const row of rows) {
    const size = 32 + row.reduce((n: number, v) => n + sqlBytes(v), 0);
    if (piece.length > 0 && bytes + size > STATEMENT_BYTES) {
      pieces.push(piece);
      piece = [];
      bytes = 0;
    }
    piece.push(row);
    bytes += size;
  }
  if (piece.length > 0) pieces.push(piece);
  return pieces;
}
