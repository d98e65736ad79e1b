import { closeSync, existsSync, fsyncSync, openSync, readdirSync, rmSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { link, rename, unlink } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { ShardKitError } from '../errors.js';
import { importOptional } from './optional-dependency.js';
import { ChunkBuilder, PlainByteArrays, type ByteSink, type ChunkMeta, type HyparquetParts, type ParquetColumn, type ParquetColumnType } from './parquet-pages.js';

/**
 * What every Parquet file shardkit writes shares: the file appears under its final name only
 * when complete (written under a `.partial` name, synced, then linked or renamed), so a killed
 * writer never leaves a half file where a reader or a resumed run would take it for done.
 */

/** Moves a finished file to its name. Without overwrite, link() takes the name only if it is still free: of two writers racing for one name exactly one wins. */
export async function publish(tmp: string, target: string, overwrite: boolean): Promise<void> {
  if (overwrite) return rename(tmp, target);
  try {
    await link(tmp, target);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') throw new ShardKitError('ALREADY_EXISTS', `${target} exists; remove it or pass overwrite`);
    throw err;
  }
  await unlink(tmp);
}

/** A fresh temp name beside `target`, marked with this process's pid (see removeStalePartials). */
export function partialName(target: string): string {
  return `${target}.${process.pid}-${randomBytes(4).toString('hex')}.partial`;
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/** Removes the temp files a killed writer of `target` left (their pid is gone); returns how many. */
export function removeStalePartials(target: string): number {
  const prefix = `${basename(target)}.`;
  return removeDeadPartials(dirname(target), (name) => (name.startsWith(prefix) ? /^(\d+)-[0-9a-f]+\.partial$/.exec(name.slice(prefix.length)) : null));
}

/**
 * Removes every temp file killed writers left in `dir`, of any target: one listing for a run
 * that writes many files there (one per shard: a listing per file is quadratic at 65,536 shards).
 */
export function removeStalePartialsIn(dir: string): number {
  return removeDeadPartials(dir, (name) => /\.(\d+)-[0-9a-f]+\.partial$/.exec(name));
}

/** `match` gives the writer's pid as its first group, or null for a name that is no temp file. */
function removeDeadPartials(dir: string, match: (name: string) => RegExpExecArray | null): number {
  if (!existsSync(dir)) return 0;
  let removed = 0;
  for (const name of readdirSync(dir)) {
    const m = match(name);
    if (m === null || alive(Number(m[1]))) continue;
    rmSync(join(dir, name), { force: true });
    removed++;
  }
  return removed;
}

export { PlainByteArrays };
export type { ParquetColumn, ParquetColumnType };

/** A batch of rows, column by column: each array as long as the batch (null where a nullable column has no value); a STRING or BYTE_ARRAY column may come as PlainByteArrays. */
/** Column name -> its values (an array, or a typed array of numbers for INT64/TIMESTAMP columns), or byte arrays in PLAIN form. */
export type ColumnBatch = Record<string, ArrayLike<unknown> | PlainByteArrays>;

/** Rows per row group: big enough for analytics engines to read well, small enough to hold in memory. */
const ROW_GROUP_ROWS = 100_000;

interface HyparquetWriterModule {
  ByteWriter: HyparquetParts['ByteWriter'];
  schemaFromColumnData(options: { columnData: Array<{ name: string; data: unknown[]; type: string; nullable: boolean }> }): unknown[];
}

/** hyparquet-writer's schema, page header, RLE and footer code (the format), without its generic value path (see parquet-pages.ts). */
async function hyparquetParts(): Promise<HyparquetParts & HyparquetWriterModule & { writeMetadata(writer: ByteSink, metadata: unknown): void }> {
  const load = () => Promise.all([
    import('hyparquet-writer'),
    import('hyparquet-writer/src/datapage.js'),
    import('hyparquet-writer/src/encoding.js'),
    import('hyparquet-writer/src/metadata.js'),
  ]);
  const [main, page, rle, meta] = await importOptional('hyparquet-writer', 'Parquet export', load as () => Promise<unknown>) as Awaited<ReturnType<typeof load>>;
  return {
    ByteWriter: main.ByteWriter as unknown as HyparquetParts['ByteWriter'],
    schemaFromColumnData: main.schemaFromColumnData as unknown as HyparquetWriterModule['schemaFromColumnData'],
    writePageHeader: page.writePageHeader as unknown as HyparquetParts['writePageHeader'],
    writeRleBitPackedHybrid: rle.writeRleBitPackedHybrid as unknown as HyparquetParts['writeRleBitPackedHybrid'],
    writeMetadata: meta.writeMetadata as unknown as (writer: ByteSink, metadata: unknown) => void,
  };
}

const MAGIC = Buffer.from('PAR1', 'latin1');

/**
 * Writes a Parquet file column by column, batches buffered up to a row group: PLAIN pages, GZIP,
 * statistics but for `unique` columns (parquet-pages.ts). A row group's pages compress on the
 * thread pool while `fill` reads the next; at most one row group waits to be written. `fill`
 * calls `append` with batches; the file takes `file`'s name only when complete. Returns the
 * absolute path and the row count.
 */
export async function writeParquetColumns(
  file: string,
  columns: readonly ParquetColumn[],
  fill: (append: (batch: ColumnBatch) => Promise<void>) => Promise<void>,
  options: { overwrite?: boolean; metadata?: Record<string, string>; rowGroupRows?: number } = {},
): Promise<{ path: string; rows: number }> {
  const groupRows = options.rowGroupRows ?? ROW_GROUP_ROWS;
  const target = resolve(file);
  const overwrite = options.overwrite === true;
  if (!overwrite && existsSync(target)) throw new ShardKitError('ALREADY_EXISTS', `${target} exists; remove it or pass overwrite`);
  const hw = await hyparquetParts();
  const tmp = partialName(target);
  let buffered = 0;
  let rows = 0;
  // The schema from the column list (not the data: an empty first batch still has its types).
  const schema = hw.schemaFromColumnData({ columnData: columns.map((c) => ({ name: c.name, data: [], type: c.type, nullable: c.nullable === true })) });
  const fd = openSync(tmp, 'w');
  let offset = 0;
  const sink = (bytes: Uint8Array) => {
    let done = 0;
    while (done < bytes.length) done += writeSync(fd, bytes, done, bytes.length - done, offset + done);
    offset += bytes.length;
  };
  const groups: Array<{ columns: ChunkMeta[]; num_rows: bigint; total_byte_size: bigint; total_compressed_size: bigint }> = [];
  // The previous row group, being compressed and written while the next is read.
  let writing: Promise<void> = Promise.resolve();
  const builders = columns.map((c) => new ChunkBuilder(hw, c));
  const flush = async () => {
    if (buffered === 0) return;
    const n = buffered;
    buffered = 0;
    const chunks = builders.map((b) => b.finish());
    await writing;
    writing = (async () => {
      const start = offset;
      const metas: ChunkMeta[] = [];
      for (const c of chunks) metas.push(await c.write(sink, () => offset));
      let uncompressed = 0n;
      for (const m of metas) uncompressed += m.meta_data.total_uncompressed_size as bigint;
      groups.push({ columns: metas, num_rows: BigInt(n), total_byte_size: uncompressed, total_compressed_size: BigInt(offset - start) });
    })();
    // Awaited by the next flush or at the end; a failure meanwhile is not unhandled.
    writing.catch(() => undefined);
  };
  try {
    try {
      sink(MAGIC);
      await fill(async (batch) => {
        const n = batch[columns[0]!.name]?.length ?? 0;
        for (const c of columns) {
          const values = batch[c.name];
          if (values === undefined || values.length !== n) throw new ShardKitError('INTERNAL', `parquet batch: column ${c.name} has ${values?.length ?? 'no'} values for ${n} rows`);
        }
        for (const b of builders) b.append(batch[b.column.name]!);
        buffered += n;
        rows += n;
        if (buffered >= groupRows) await flush();
      });
      await flush();
      await writing;
      const footer = new hw.ByteWriter();
      hw.writeMetadata(footer, {
        version: 2,
        created_by: 'shardkit',
        schema,
        num_rows: BigInt(rows),
        row_groups: groups,
        key_value_metadata: Object.entries(options.metadata ?? {}).map(([key, value]) => ({ key, value })),
      });
      // writeMetadata ends with the footer's length.
      sink(footer.getBytes());
      sink(MAGIC);
      fsyncSync(fd);
    } finally {
      await writing.catch(() => undefined);
      closeSync(fd);
    }
    await publish(tmp, target, overwrite);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
  return { path: target, rows };
}
