import { createHash } from 'node:crypto';
import type { LookupRow, MappingRow, ObjectRecord, ShardBackend, ShardCopy, ShardRef } from '../storage/shard-backend.js';

type Copier = ShardBackend & ShardCopy;

/**
 * How the copier handles one kind of table (objects, mappings, lookups) without knowing which:
 * scan in key order, a key that orders the same way on every backend (byte order), the bytes a
 * row is compared and checksummed by, and the writes that put or remove rows on the target.
 */
export interface TableKind<R> {
  readonly name: 'objects' | 'mappings' | 'lookups';
  scan(backend: Copier, ref: ShardRef, table: string, after: string | undefined, limit: number): Promise<R[]>;
  /** The row's key, encoded so that compareKeys orders it like the scan. */
  key(row: R): string;
  compareKeys(a: string, b: string): number;
  /** Everything the row holds, as text: equal text means an equal row. */
  encode(row: R): string;
  put(backend: Copier, ref: ShardRef, table: string, rows: R[]): Promise<void>;
  remove(backend: Copier, ref: ShardRef, table: string, keys: string[]): Promise<void>;
}

export const objectsKind: TableKind<ObjectRecord> = {
  name: 'objects',
  scan: (b, ref, table, after, limit) => b.scanObjects(ref, table, after === undefined ? { limit } : { limit, after: Number(after) }),
  key: (r) => String(r.localId),
  compareKeys: (a, b) => Number(a) - Number(b),
  encode: (r) => `${r.localId}\u0000${r.createdAt.getTime()}\u0000${r.data}`,
  put: (b, ref, table, rows) => b.putObjectRows(ref, table, rows),
  remove: async (b, ref, table, keys) => {
    for (const k of keys) await b.deleteObject(ref, table, Number(k));
  },
};

function splitPair(key: string): { fromId: bigint; toId: bigint } {
  const i = key.indexOf(':');
  return { fromId: BigInt(key.slice(0, i)), toId: BigInt(key.slice(i + 1)) };
}

export const mappingsKind: TableKind<MappingRow> = {
  name: 'mappings',
  scan: (b, ref, table, after, limit) => b.scanMappings(ref, table, after === undefined ? { limit } : { limit, after: splitPair(after) }),
  key: (r) => `${r.fromId}:${r.toId}`,
  compareKeys: (a, b) => {
    const x = splitPair(a);
    const y = splitPair(b);
    return x.fromId !== y.fromId ? (x.fromId < y.fromId ? -1 : 1) : x.toId === y.toId ? 0 : x.toId < y.toId ? -1 : 1;
  },
  encode: (r) => `${r.fromId}:${r.toId}:${r.sequence}`,
  put: (b, ref, table, rows) => b.putMappingRows(ref, table, rows),
  remove: async (b, ref, table, keys) => {
    for (const k of keys) {
      const p = splitPair(k);
      await b.removeMapping(ref, table, p.fromId, p.toId);
    }
  },
};

export const lookupsKind: TableKind<LookupRow> = {
  name: 'lookups',
  scan: (b, ref, table, after, limit) => b.scanLookups(ref, table, after === undefined ? { limit } : { limit, after }),
  key: (r) => r.key,
  // Byte order of UTF-8, as every backend sorts the key column (JS `<` compares UTF-16 units).
  compareKeys: (a, b) => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8')),
  encode: (r) => `${r.key}\u0000${r.value}`,
  put: (b, ref, table, rows) => b.putLookupRows(ref, table, rows),
  remove: async (b, ref, table, keys) => {
    for (const k of keys) await b.deleteLookup(ref, table, k);
  },
};

/** Checksum of a chunk's rows (in key order). */
export function chunkSum(encoded: string[]): string {
  const h = createHash('sha1');
  for (const e of encoded) {
    h.update(e);
    h.update('\u0001');
  }
  return `${encoded.length}:${h.digest('base64')}`;
}
