import type { RocksDB } from './rocksdb.js';
import { ShardKitError } from '../errors.js';
import { readRow } from './row-reader.js';
import type { DatasetConfig } from './dataset-config.js';
import type { ReadQuery } from './row-reader.js';
import type { RowContext } from './row-context.js';
import type { GetRowOptions, GetRowRequest, RowResult } from './types.js';

/** What a snapshot needs from its store: dataset lookup and request checks (no import of the store). */
export interface SnapshotSource {
  readonly clock: () => number;
  dataset(name: string): DatasetConfig;
  prepareRead(ds: DatasetConfig, r: GetRowRequest): [RowContext, ReadQuery];
}

/**
 * A consistent read-only view of the store at one instant (a RocksDB snapshot): backups and
 * exports read through one while writes go on.
 */
export class WideColumnSnapshot {
  private closed = false;

  /** @internal */
  constructor(private readonly store: SnapshotSource, /** @internal */ readonly session: RocksDB, readonly takenAt: number, private readonly onClose: () => void) {}

  getRow(dataset: string, row: string, options: GetRowOptions = {}): Promise<RowResult> {
    return this.batchGetRows(dataset, [{ ...options, row }]).then((r) => r[0]!);
  }

  async batchGetRows(dataset: string, requests: GetRowRequest[]): Promise<RowResult[]> {
    this.check();
    const ds = this.store.dataset(dataset);
    const now = this.store.clock();
    return Promise.all(requests.map((r) => {
      const [ctx, q] = this.store.prepareRead(ds, r);
      return readRow(this.session, ctx, q, now);
    }));
  }

  /** Every RocksDB record of the store (data and metadata), in key order. */
  async *entries(): AsyncGenerator<{ key: Buffer; value: Buffer }> {
    this.check();
    for await (const e of this.session.iterator({}, { capacity: 512 })) yield e;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.onClose();
    await this.session.close();
  }

  private check(): void {
    if (this.closed) throw new ShardKitError('CLOSED', 'this snapshot is closed');
  }
}
