import { createHash } from 'node:crypto';
import Database from 'better-sqlite3';
import type { TableSummary } from './backup-manifest.js';

const MASK = (1n << 64n) - 1n;

const cell = (v: unknown): unknown => (typeof v === 'bigint' ? `${v}n` : Buffer.isBuffer(v) ? `x${v.toString('hex')}` : v);

/**
 * Rows and a checksum of every table of one SQLite file: the sum (mod 2^64) of a hash of each
 * row, so the order the rows come back in does not matter. `label` prefixes the table names.
 */
export function sqliteTableSummaries(path: string, label: string): Record<string, TableSummary> {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    const out: Record<string, TableSummary> = {};
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name").pluck().all() as string[];
    for (const t of tables) {
      let rows = 0;
      let sum = 0n;
      // Names come from the file's own catalogue, quoted.
      for (const row of db.prepare(`SELECT * FROM "${t.replace(/"/g, '""')}"`).raw().safeIntegers(true).iterate() as Iterable<unknown[]>) {
        rows++;
        sum = (sum + createHash('sha256').update(JSON.stringify(row.map(cell))).digest().readBigUInt64BE(0)) & MASK;
      }
      out[`${label}:${t}`] = { rows, checksum: sum.toString(16) };
    }
    return out;
  } finally {
    db.close();
  }
}
