import { adminQuery, type HostAdmin } from '../failover/host-admin.js';
import { tableChecksums } from '../failover/table-checksums.js';
import type { TableSummary } from './backup-manifest.js';

const q = (n: string) => `\`${n.replace(/`/g, '``')}\``;

/** `db.table` -> rows and CHECKSUM TABLE of every user table on `host`, or of those in `schemas` (quiet while it runs: a stopped applier or a scratch server). */
export async function mariadbTableSummaries(admin: HostAdmin, host: string, schemas?: readonly string[]): Promise<Record<string, TableSummary>> {
  const checksums = await tableChecksums(admin, host, schemas);
  const names = [...checksums.keys()];
  const out: Record<string, TableSummary> = {};
  for (let i = 0; i < names.length; i += 200) {
    const batch = names.slice(i, i + 200);
    // Names come from the server's own catalogue; a UNION of counts is one round trip per batch.
    const sql = batch.map((n, j) => {
      const [db, table] = n.split('.') as [string, string];
      return `SELECT ${j} AS i, COUNT(*) AS n FROM ${q(db)}.${q(table)}`;
    }).join(' UNION ALL ');
    const rows = await adminQuery<Array<{ i: number | string; n: number | string }>>(admin, host, sql);
    for (const r of rows) {
      const name = batch[Number(r.i)]!;
      out[name] = { rows: Number(r.n), checksum: checksums.get(name)! };
    }
  }
  return out;
}
