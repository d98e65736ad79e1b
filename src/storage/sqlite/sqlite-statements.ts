/**
 * The SQL text of each table, built once per table: better-sqlite3's statements are cached by
 * this text (shard-file.ts), so the same string must come back every call.
 */
export type TableSql = Record<string, string>;

export function objectSql(t: string): TableSql {
  return {
    insert: `INSERT INTO "${t}" (data, ts) VALUES (?, ?)`,
    selectOne: `SELECT local_id, data, ts FROM "${t}" WHERE local_id = ?`,
    // One statement whatever the number of keys: the ids travel as one JSON array.
    selectMany: `SELECT local_id, data, ts FROM "${t}" WHERE local_id IN (SELECT value FROM json_each(?))`,
    update: `UPDATE "${t}" SET data = ? WHERE local_id = ?`,
    delete: `DELETE FROM "${t}" WHERE local_id = ?`,
    count: `SELECT count(*) FROM "${t}"`,
    // ShardCopy: whole-table scans by local id, and writes that keep the id.
    scanFirst: `SELECT local_id, data, ts FROM "${t}" ORDER BY local_id LIMIT ?`,
    scanAfter: `SELECT local_id, data, ts FROM "${t}" WHERE local_id > ? ORDER BY local_id LIMIT ?`,
    putRow: `INSERT INTO "${t}" (local_id, data, ts) VALUES (?, ?, ?) ON CONFLICT (local_id) DO UPDATE SET data = excluded.data, ts = excluded.ts`,
    maxId: `SELECT coalesce(max(local_id), 0) FROM "${t}"`,
  };
}

export function mappingSql(t: string): TableSql {
  const list = (op: string, dir: string) =>
    `SELECT to_id, sequence FROM "${t}" WHERE from_id = ?${op ? ` AND (sequence, to_id) ${op} (?, ?)` : ''} ORDER BY sequence ${dir}, to_id ${dir} LIMIT ?`;
  return {
    upsert: `INSERT INTO "${t}" (from_id, to_id, sequence) VALUES (?, ?, ?) ON CONFLICT (from_id, to_id) DO UPDATE SET sequence = excluded.sequence`,
    listAsc: list('', 'ASC'),
    listDesc: list('', 'DESC'),
    // Keyset paging: a row-value comparison on the (from_id, sequence, to_id) index is one range scan.
    listAscAfter: list('>', 'ASC'),
    listDescAfter: list('<', 'DESC'),
    remove: `DELETE FROM "${t}" WHERE from_id = ? AND to_id = ?`,
    count: `SELECT count(*) FROM "${t}" WHERE from_id = ?`,
    // Whole-table scans walk the primary key (from_id, to_id); a row value resumes after a row.
    scanFirst: `SELECT from_id, to_id, sequence FROM "${t}" ORDER BY from_id, to_id LIMIT ?`,
    scanAfter: `SELECT from_id, to_id, sequence FROM "${t}" WHERE (from_id, to_id) > (?, ?) ORDER BY from_id, to_id LIMIT ?`,
    getOne: `SELECT sequence FROM "${t}" WHERE from_id = ? AND to_id = ?`,
  };
}

export function lookupSql(t: string): TableSql {
  return {
    put: `INSERT INTO "${t}" ("key", "value") VALUES (?, ?) ON CONFLICT ("key") DO UPDATE SET "value" = excluded."value"`,
    get: `SELECT "value" FROM "${t}" WHERE "key" = ?`,
    delete: `DELETE FROM "${t}" WHERE "key" = ?`,
    scanFirst: `SELECT "key", "value" FROM "${t}" ORDER BY "key" LIMIT ?`,
    scanAfter: `SELECT "key", "value" FROM "${t}" WHERE "key" > ? ORDER BY "key" LIMIT ?`,
  };
}

/** AUTOINCREMENT's counters (one row per table in sqlite_sequence, which SQLite creates with the first such table). */
export const SEQUENCE_SQL = {
  get: 'SELECT seq FROM sqlite_sequence WHERE name = ?',
  raise: 'UPDATE sqlite_sequence SET seq = ? WHERE name = ? AND seq < ?',
  insert: 'INSERT INTO sqlite_sequence (name, seq) SELECT ?, ? WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = ?)',
};
