import type { Fleet, SchemaDef } from '../shard-backend.js';
import { mappingIndexName } from '../shard-names.js';

/**
 * DDL of one shard file. Every statement is CREATE ... IF NOT EXISTS, so opening an old file
 * with a newer schema only adds the tables of new types, mappings or keyspaces (no ALTER).
 * Table names come from the validated schema (config.ts `identifier`), never from requests.
 */
export function shardDdl(schema: SchemaDef, fleet: Fleet, only?: ReadonlySet<string>): string {
  const want = (table: string) => only === undefined || only.has(table);
  const out: string[] = [];
  if (fleet === 'objects') {
    for (const t of schema.types) {
      if (!want(t.table)) continue;
      // AUTOINCREMENT: a deleted row's local id is never handed out again (it is part of an ID).
      out.push(`CREATE TABLE IF NOT EXISTS "${t.table}" (local_id INTEGER PRIMARY KEY AUTOINCREMENT, data TEXT NOT NULL, ts INTEGER NOT NULL);`);
    }
    for (const m of schema.mappings) {
      if (!want(m.table)) continue;
      // The primary key stops duplicate pairs; the index makes a page one range scan.
      out.push(
        `CREATE TABLE IF NOT EXISTS "${m.table}" (from_id INTEGER NOT NULL, to_id INTEGER NOT NULL, sequence INTEGER NOT NULL, PRIMARY KEY (from_id, to_id)) WITHOUT ROWID;`,
        `CREATE INDEX IF NOT EXISTS "${mappingIndexName(m.table)}" ON "${m.table}" (from_id, sequence, to_id);`,
      );
    }
  } else {
    for (const k of schema.keyspaces) {
      if (!want(k.table)) continue;
      // BINARY collation: keys compare byte for byte ('a' and 'a ' and 'A' are three keys).
      out.push(`CREATE TABLE IF NOT EXISTS "${k.table}" ("key" TEXT PRIMARY KEY, "value" INTEGER NOT NULL) WITHOUT ROWID;`);
    }
  }
  return out.join('\n');
}
