/**
 * The MariaDB copy's exact row count (src/moves/mariadb/copied-rows.ts), on fake connections: every
 * table counted once, whatever the number of streams; no statement over STATEMENT_TABLES tables
 * (issue #28: one sum over 640 subqueries overran the server's thread stack); the statements
 * spread over the streams' connections, each closed at the end.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copiedRows } from '../../src/moves/mariadb/copied-rows.js';
import { STATEMENT_TABLES } from '../../src/moves/mariadb/verify.js';

test('copiedRows counts every table once, in statements of at most STATEMENT_TABLES tables, over up to `streams` connections', async () => {
  const tables = Array.from({ length: 640 }, (_, i) => `db${String(i >> 4).padStart(5, '0')}.t${i % 16}`);
  // Table i holds i rows.
  const rowsOf = new Map(tables.map((t, i) => [t, i]));
  for (const streams of [1, 4, 16]) {
    const counted: string[] = [];
    let opened = 0;
    let closed = 0;
    let widest = 0;
    const connect = async () => {
      opened++;
      return {
        query: async (sql: string) => {
          const names = [...sql.matchAll(/FROM `([^`]+)`\.`([^`]+)`/g)].map((m) => `${m[1]}.${m[2]}`);
          widest = Math.max(widest, names.length);
          counted.push(...names);
          return [names.map((t) => ({ n: String(rowsOf.get(t)) })), []];
        },
        end: async () => void closed++,
        destroy: () => undefined,
      };
    };
    const rows = await copiedRows(connect as never, 'MySQL002A', tables, streams);
    assert.equal(rows, (639 * 640) / 2, `${streams} streams`);
    assert.deepEqual([...counted].sort(), [...tables].sort(), `every table once with ${streams} streams`);
    assert.ok(widest <= STATEMENT_TABLES, `a statement of ${widest} tables`);
    assert.equal(opened, Math.min(streams, Math.ceil(640 / Math.min(STATEMENT_TABLES, Math.ceil(640 / streams)))));
    assert.equal(closed, opened);
  }
});
