import { chunkReader, primaryKey } from './verify.js';
import { q, type Conn } from './names.js';

/**
 * Copies one fenced table to the target: re-created from SHOW CREATE TABLE (a partial copy of an
 * interrupted run is replaced; prepare made sure the target held no rows of its own), then rows
 * in primary-key chunks. SHOW CREATE TABLE carries the AUTO_INCREMENT counter, and explicit ids
 * push it past max(id) anyway, so ids made on the target continue after the source's.
 */
export async function copyTable(src: Conn, dst: Conn, srcDb: string, dstDb: string, table: string): Promise<number> {
  const [created] = await src.query(`SHOW CREATE TABLE ${q(srcDb)}.${q(table)}`);
  const ddl = String((created as Array<Record<string, string>>)[0]!['Create Table']);
  await dst.query(`DROP TABLE IF EXISTS ${q(dstDb)}.${q(table)}`);
  await dst.query(`USE ${q(dstDb)}`);
  await dst.query(ddl);
  const keys = await primaryKey(src, srcDb, table);
  const reader = chunkReader(src, srcDb, table, keys);
  let after: unknown[] | undefined;
  let copied = 0;
  for (;;) {
    const { fields, rows } = await reader.next(after);
    if (rows.length === 0) return copied;
    copied += rows.length;
    const cols = fields.map(q).join(', ');
    const one = `(${fields.map(() => '?').join(', ')})`;
    await dst.query(`INSERT INTO ${q(dstDb)}.${q(table)} (${cols}) VALUES ${rows.map(() => one).join(', ')}`, rows.flat());
    const idx = keys.map((k) => fields.indexOf(k));
    after = idx.map((i) => rows[rows.length - 1]![i]);
  }
}
