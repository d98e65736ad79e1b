import { q, type Conn } from './names.js';
import { chunks, STATEMENT_TABLES } from './verify.js';

/**
 * The rows of `tables` (`db.table`) on `host`: the copy's exact count once the dump is loaded,
 * for its last progress line. A statement per STATEMENT_TABLES tables (one sum over 640
 * subqueries overran the server's thread stack, issue #28), up to `streams` of them at once on
 * their own connections: counted one after the other, 320 tables of 1M rows took 1.6-2.4 s of
 * the copy (bench/moves-scale-mariadb.bench.ts).
 */
export async function copiedRows(connect: (host: string) => Promise<Conn>, host: string, tables: readonly string[], streams: number): Promise<number> {
  const n = Math.max(1, streams);
  const parts = chunks(tables, Math.min(STATEMENT_TABLES, Math.max(1, Math.ceil(tables.length / n))));
  let next = 0;
  let rows = 0;
  const worker = async () => {
    const c = await connect(host);
    try {
      for (let i = next++; i < parts.length; i = next++) {
        const [n] = await c.query(parts[i]!.map((t) => `SELECT COUNT(*) AS n FROM ${t.split('.').map(q).join('.')}`).join(' UNION ALL '));
        for (const r of n as Array<{ n: number | string }>) rows += Number(r.n);
      }
    } finally {
      await c.end().catch(() => c.destroy());
    }
  };
  await Promise.all(Array.from({ length: Math.min(n, parts.length) }, worker));
  return rows;
}
