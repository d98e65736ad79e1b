import type pg from 'pg';
import { ShardKitError } from '../../errors.js';
import { importOptional } from '../../util/optional-dependency.js';
import { PlainByteArrays } from '../../util/parquet-file.js';

/**
 * A PostgreSQL shard's object rows through one `COPY ... TO STDOUT (FORMAT binary)` in the
 * reader's snapshot: the server sends `data` as its UTF-8 bytes and the ids as 8 bytes, parsed
 * into columns (data copied once into its Parquet PLAIN form) with no object per row. The SELECT it replaced went through pg's row parser (a
 * string per value, decoded and encoded again) and keyset pages: the server's cost for the same
 * rows is what `psql COPY` pays (bench/RESULTS.md, Parquet export).
 */

/** Object rows of a page column by column, `data` already in Parquet's PLAIN form (the PostgreSQL binary COPY reader fills it). */
export interface ObjectPage {
  count: number;
  localId: Float64Array;
  ts: Float64Array;
  data: PlainByteArrays;
}

/** PGCOPY\n\377\r\n\0, then flags and the header extension's length. */
const SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');
const TWO32 = 4294967296;

/** A signed 8-byte big-endian integer below 2^53 (local ids, unix ms) as a number. */
const int8 = (b: Buffer, at: number): number => b.readInt32BE(at) * TWO32 + b.readUInt32BE(at + 4);

/**
 * Parses the binary COPY rows (local_id int8, data text, ts int8) of `stream` into pages of
 * `pageRows`, each awaited: the stream is read no further meanwhile. The chunks are rewritten in
 * place: pg-copy-streams hands over views of CopyData content that nothing else reads again.
 */
export async function copyObjectPages(stream: AsyncIterable<Buffer>, pageRows: number, onPage: (page: ObjectPage) => Promise<void>): Promise<void> {
  let rest: Buffer | undefined;
  let header = true;
  let ended = false;
  // Columns, data straight into its PLAIN form: no object per row.
  // Each page's bytes sized as the last one ended: no doubling and copying as it fills.
  let expect = 1 << 16;
  const fresh = (): ObjectPage => ({ count: 0, localId: new Float64Array(pageRows), ts: new Float64Array(pageRows), data: new PlainByteArrays(pageRows, expect) });
  let page = fresh();
  for await (const chunk of stream) {
    const b = rest === undefined ? chunk : Buffer.concat([rest, chunk]);
    let at = 0;
    rest = undefined;
    if (header) {
      // The signature, flags, the extension's length and the extension, all arrived.
      if (b.length < SIGNATURE.length + 8 || b.length < SIGNATURE.length + 8 + b.readUInt32BE(SIGNATURE.length + 4)) {
        rest = b;
        continue;
      }
      if (!b.subarray(0, SIGNATURE.length).equals(SIGNATURE)) throw new ShardKitError('INTERNAL', 'COPY binary: no PGCOPY signature');
      at = SIGNATURE.length + 8 + b.readUInt32BE(SIGNATURE.length + 4);
      header = false;
    }
    // Each row's data is made PLAIN where it stands: its length rewritten little-endian over the
    // big-endian one before it, then moved down over the bytes already parsed (copyWithin: no
    // view per row), so the chunk's rows become one run [seg, w) copied into the page at once.
    let seg = at;
    let w = at;
    for (;;) {
      if (at + 2 > b.length) break;
      const fields = b.readInt16BE(at);
      if (fields === -1) {
        ended = true;
        at += 2;
        break;
      }
      if (fields !== 3) throw new ShardKitError('INTERNAL', `COPY binary: a row of ${fields} fields, expected 3`);
      // local_id (4 + 8), data (4 + n), ts (4 + 8): the row is whole once all of it arrived.
      if (at + 2 + 12 + 4 > b.length) break;
      const n = b.readInt32BE(at + 14);
      const end = at + 2 + 12 + 4 + n + 12;
      if (end > b.length) break;
      page.localId[page.count] = int8(b, at + 6);
      page.ts[page.count] = int8(b, at + 22 + n);
      b.writeUInt32LE(n, at + 14);
      page.data.mark(w - seg);
      if (w !== at + 14) b.copyWithin(w, at + 14, at + 18 + n);
      w += 4 + n;
      page.count++;
      at = end;
      if (page.count >= pageRows) {
        page.data.append(b.subarray(seg, w));
        expect = Math.max(expect, page.data.end + (page.data.end >> 4));
        await onPage(page);
        page = fresh();
        seg = w = at;
      }
    }
    if (w > seg) page.data.append(b.subarray(seg, w));
    if (at < b.length) rest = b.subarray(at);
  }
  if (!ended) throw new ShardKitError('INTERNAL', 'COPY binary: the stream ended before its trailer');
  if (page.count > 0) await onPage(page);
}

/** A binary COPY of the shard's object rows in local id order (`sinceMs`: written at or after it), read on `client` (inside its transaction). */
export async function copyObjects(client: pg.Client, table: string, sinceMs: number | undefined, pageRows: number, onPage: (page: ObjectPage) => Promise<void>): Promise<void> {
  const { to } = await importOptional('pg-copy-streams', 'Parquet export from PostgreSQL', () => import('pg-copy-streams'));
  // COPY takes no parameters: the bound is an integer written out (checked, never text from outside).
  const since = sinceMs === undefined ? undefined : Math.trunc(sinceMs);
  if (since !== undefined && !Number.isSafeInteger(since)) throw new ShardKitError('INVALID_ARGUMENT', `--since ${sinceMs} is not a time in ms: nothing written`);
  const where = since === undefined ? '' : ` WHERE r.ts >= ${since}`;
  const stream = client.query(to(`COPY (SELECT r.local_id, r.data, r.ts FROM ${table} r${where} ORDER BY r.local_id) TO STDOUT (FORMAT binary)`));
  // Left half read (the page handler failed), the stream is destroyed and the connection later
  // cut: the error pg then reports on it must not be an uncaught one.
  stream.on('error', () => undefined);
  await copyObjectPages(stream as AsyncIterable<Buffer>, pageRows, onPage);
}
