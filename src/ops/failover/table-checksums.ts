import { adminQuery, type HostAdmin } from './host-admin.js';

export const SYSTEM_DATABASES = new Set(['mysql', 'information_schema', 'performance_schema', 'sys']);

/** The host's databases, system ones left out. */
export async function userDatabases(admin: HostAdmin, host: string): Promise<string[]> {
  const rows = await adminQuery<Array<{ Database: string }>>(admin, host, 'SHOW DATABASES');
  return rows.map((r) => r.Database).filter((d) => !SYSTEM_DATABASES.has(d)).sort();
}

/** `db.table` -> CHECKSUM TABLE value for every table of every user database. */
export async function tableChecksums(admin: HostAdmin, host: string, schemas?: readonly string[]): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  if (schemas !== undefined && schemas.length === 0) return out;
  const only = schemas === undefined ? '' : ` AND TABLE_SCHEMA IN (${schemas.map(() => '?').join(', ')})`;
  const tables = await adminQuery<Array<{ s: string; t: string }>>(admin, host, {
    sql: `SELECT TABLE_SCHEMA AS s, TABLE_NAME AS t FROM information_schema.TABLES WHERE TABLE_TYPE = 'BASE TABLE' AND TABLE_SCHEMA NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys')${only} ORDER BY 1, 2`,
    values: [...(schemas ?? [])],
  });
  // Identifiers come from the server's own catalogue; quoted with backticks doubled.
  const q = (n: string) => `\`${n.replace(/`/g, '``')}\``;
  for (let i = 0; i < tables.length; i += 200) {
    const batch = tables.slice(i, i + 200);
    const rows = await adminQuery<Array<{ Table: string; Checksum: string | number | null }>>(admin, host, `CHECKSUM TABLE ${batch.map((t) => `${q(t.s)}.${q(t.t)}`).join(', ')}`);
    for (const r of rows) out.set(r.Table, String(r.Checksum));
  }
  return out;
}

/** Tables whose checksums differ between two hosts (or that exist on one only); empty when identical. */
export async function compareHosts(admin: HostAdmin, a: string, b: string): Promise<{ tables: number; differing: string[] }> {
  const [x, y] = await Promise.all([tableChecksums(admin, a), tableChecksums(admin, b)]);
  const names = new Set([...x.keys(), ...y.keys()]);
  const differing = [...names].filter((n) => x.get(n) !== y.get(n)).sort();
  return { tables: names.size, differing };
}
