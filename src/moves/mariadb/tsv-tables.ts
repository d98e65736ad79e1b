import { q, type Conn } from './names.js';

/** A table the tab-separated copy can carry, and how to read and load it. */
export interface TsvTable {
  /** `db.table`. */
  name: string;
  database: string;
  /** The SELECT of its rows, as the batch client prints them. */
  select: string;
  /** The LOAD DATA that takes those rows back (LOCAL: the mover streams them). */
  load: string;
}

/**
 * Column types whose text form, as the client prints it, loads back to the same value. BIT and
 * the spatial types print raw or binary forms LOAD DATA does not read back as such: a copy with
 * them goes the mariadb-dump way.
 */
const TEXT_SAFE = new Set([
  'tinyint', 'smallint', 'mediumint', 'int', 'bigint', 'decimal', 'float', 'double',
  'char', 'varchar', 'tinytext', 'text', 'mediumtext', 'longtext', 'json',
  'binary', 'varbinary', 'tinyblob', 'blob', 'mediumblob', 'longblob',
  'date', 'datetime', 'timestamp', 'time', 'year', 'enum', 'set',
]);

interface ColumnRow { db: string; t: string; c: string; type: string; nullable: string; generated: string; extra: string }

/**
 * The base tables of `databases` (less `ignore`, `db.table`), with their SELECT and LOAD DATA,
 * or the reason the copy cannot carry them as text: a trigger (LOAD DATA would fire it on the
 * target), a sequence, or a column type of no faithful text form.
 */
export async function tsvTables(c: Conn, databases: readonly string[], ignore: readonly string[]): Promise<TsvTable[] | { unsupported: string }> {
  if (databases.length === 0) return [];
  const marks = databases.map(() => '?').join(', ');
  const [triggers] = await c.query(`SELECT CONCAT(EVENT_OBJECT_SCHEMA, '.', EVENT_OBJECT_TABLE) AS t FROM information_schema.TRIGGERS WHERE EVENT_OBJECT_SCHEMA IN (${marks}) LIMIT 1`, [...databases]);
  const trig = (triggers as Array<{ t: string }>)[0];
  if (trig !== undefined) return { unsupported: `table ${trig.t} has a trigger` };
  const [tables] = await c.query(`SELECT TABLE_SCHEMA AS db, TABLE_NAME AS t, TABLE_TYPE AS type FROM information_schema.TABLES WHERE TABLE_SCHEMA IN (${marks}) ORDER BY TABLE_SCHEMA, TABLE_NAME`, [...databases]);
  const skip = new Set(ignore);
  const base: Array<{ db: string; t: string }> = [];
  for (const r of tables as Array<{ db: string; t: string; type: string }>) {
    if (skip.has(`${r.db}.${r.t}`) || r.type === 'VIEW') continue;
    if (r.type !== 'BASE TABLE') return { unsupported: `${r.db}.${r.t} is a ${r.type.toLowerCase()}` };
    base.push(r);
  }
  const [cols] = await c.query(`SELECT TABLE_SCHEMA AS db, TABLE_NAME AS t, COLUMN_NAME AS c, DATA_TYPE AS type, IS_NULLABLE AS nullable, IS_GENERATED AS generated, EXTRA AS extra FROM information_schema.COLUMNS WHERE TABLE_SCHEMA IN (${marks}) ORDER BY TABLE_SCHEMA, TABLE_NAME, ORDINAL_POSITION`, [...databases]);
  const byTable = new Map<string, ColumnRow[]>();
  for (const r of cols as ColumnRow[]) {
    const key = `${r.db}.${r.t}`;
    let list = byTable.get(key);
    if (list === undefined) byTable.set(key, (list = []));
    list.push(r);
  }
  const out: TsvTable[] = [];
  for (const { db, t } of base) {
    const columns = (byTable.get(`${db}.${t}`) ?? []).filter((col) => col.generated !== 'ALWAYS');
    const odd = columns.find((col) => !TEXT_SAFE.has(col.type.toLowerCase()));
    if (odd !== undefined) return { unsupported: `column ${db}.${t}.${odd.c} is of type ${odd.type}` };
    out.push({ name: `${db}.${t}`, database: db, ...tableSql(db, t, columns) });
  }
  return out;
}

/**
 * The batch client prints NULL as the word NULL, which a text column may hold too: a nullable
 * column is read with a flag beside it, and loaded through variables that the flag turns to NULL.
 * With such a SET clause, MariaDB 10.11's LOAD DATA gives a row whose AUTO_INCREMENT column it
 * read as 0 a new value despite NO_AUTO_VALUE_ON_ZERO (and a duplicate then drops a row): that
 * column is set through a variable too, which keeps it.
 */
function tableSql(db: string, t: string, columns: readonly ColumnRow[]): { select: string; load: string } {
  const reads: string[] = [];
  const targets: string[] = [];
  const sets: string[] = [];
  const viaSet = columns.some((col) => col.nullable === 'YES');
  columns.forEach((col, i) => {
    if (viaSet && /auto_increment/i.test(col.extra) && col.nullable !== 'YES') {
      reads.push(q(col.c));
      targets.push(`@v${i}`);
      sets.push(`${q(col.c)} = @v${i}`);
    } else if (col.nullable === 'YES') {
      reads.push(q(col.c), `${q(col.c)} IS NULL`);
      targets.push(`@v${i}`, `@n${i}`);
      sets.push(`${q(col.c)} = IF(@n${i} = '1', NULL, @v${i})`);
    } else {
      reads.push(q(col.c));
      targets.push(q(col.c));
    }
  });
  const table = `${q(db)}.${q(t)}`;
  return {
    select: `SELECT ${reads.join(', ')} FROM ${table}`,
    load: `LOAD DATA LOCAL INFILE 'rows' INTO TABLE ${table} CHARACTER SET binary FIELDS TERMINATED BY '\\t' ESCAPED BY '\\\\' LINES TERMINATED BY '\\n' (${targets.join(', ')})${sets.length > 0 ? ` SET ${sets.join(', ')}` : ''}`,
  };
}
