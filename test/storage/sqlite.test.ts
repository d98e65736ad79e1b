import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { defaultConfig, resolveSchema } from '../../src/config/config.js';
import { parseConfig } from '../../src/config/config.js';
import { SqliteBackend } from '../../src/storage/sqlite/index.js';
import type { SchemaDef } from '../../src/storage/shard-backend.js';
import { runStorageSuite } from '../conformance/storage-suite.js';

const schema = resolveSchema(parseConfig(defaultConfig({ shards: 16, pairs: 2 })));

function tempRoot(): string {
  return mkdtempSync(join(tmpdir(), 'shardkit-sqlite-'));
}

runStorageSuite({
  name: 'sqlite',
  factory: () => {
    const root = tempRoot();
    return {
      backend: new SqliteBackend({ root, schema, maxOpenShards: 4 }),
      schema,
      hosts: ['MySQL001A', 'msdb001a'],
      cleanup: () => rmSync(root, { recursive: true, force: true }),
    };
  },
});

test('a host is a directory and a shard is db03429.sqlite in it, created on first write', async () => {
  const root = tempRoot();
  const backend = new SqliteBackend({ root, schema });
  try {
    const ref = { host: 'MySQL007A', shard: 3429, fleet: 'objects' as const };
    assert.equal(backend.shardPath(ref), join(root, 'MySQL007A', 'db03429.sqlite'));
    await backend.getObjects(ref, [{ table: 'pins', localId: 1 }]);
    assert.equal(existsSync(join(root, 'MySQL007A')), false, 'a read creates nothing');
    const pin = await backend.insertObject(ref, 'pins', '{"details":"x"}');
    assert.equal(existsSync(backend.shardPath(ref)), true);
    await backend.close();
    // Every table of the fleet exists, with the seed's names; the file is readable by plain SQLite.
    const db = new Database(join(root, 'MySQL007A', 'db03429.sqlite'), { readonly: true });
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name").pluck().all();
    assert.deepEqual(tables, [...schema.types.map((t) => t.table), ...schema.mappings.map((m) => m.table)].sort());
    assert.equal(db.pragma('journal_mode', { simple: true }), 'wal');
    assert.deepEqual(db.prepare('SELECT data FROM pins WHERE local_id = ?').pluck().all(pin.localId), ['{"details":"x"}']);
    db.close();
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('the mod-shard fleet uses the same file naming in its host directory', async () => {
  const root = tempRoot();
  const backend = new SqliteBackend({ root, schema });
  try {
    await backend.putLookup({ host: 'msdb003a', shard: 1537, fleet: 'lookups' }, 'lookup_ip', '1.2.3.4', 42n);
    await backend.close();
    const db = new Database(join(root, 'msdb003a', 'db01537.sqlite'), { readonly: true });
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").pluck().all();
    assert.deepEqual(tables, ['lookup_email', 'lookup_ip', 'lookup_username']);
    assert.equal(db.prepare('SELECT "value" FROM lookup_ip WHERE "key" = ?').safeIntegers(true).pluck().get('1.2.3.4'), 42n);
    db.close();
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('open handles stay within maxOpenShards however many shards are touched', async () => {
  const root = tempRoot();
  const backend = new SqliteBackend({ root, schema, maxOpenShards: 8 });
  try {
    const ids: Array<[number, number]> = [];
    for (let shard = 0; shard < 60; shard++) {
      const o = await backend.insertObject({ host: 'h1', shard, fleet: 'objects' }, 'pins', JSON.stringify({ shard }));
      ids.push([shard, o.localId]);
      assert.ok(backend.openFiles <= 8);
    }
    // Evicted shards reopen transparently.
    for (const [shard, localId] of ids) {
      const [row] = await backend.getObjects({ host: 'h1', shard, fleet: 'objects' }, [{ table: 'pins', localId }]);
      assert.deepEqual(JSON.parse(row!.data), { shard });
    }
    assert.ok(backend.openFiles <= 8);
    assert.equal(readdirSync(join(root, 'h1')).filter((f) => /^db\d{5}\.sqlite$/.test(f)).length, 60);
  } finally {
    await backend.close();
    rmSync(root, { recursive: true, force: true });
  }
});

test('a new type or mapping only adds its table to existing shard files', async () => {
  const root = tempRoot();
  const ref = { host: 'h1', shard: 1, fleet: 'objects' as const };
  try {
    const old = new SqliteBackend({ root, schema });
    const pin = await old.insertObject(ref, 'pins', '{"a":1}');
    await old.close();
    const newer: SchemaDef = {
      ...schema,
      types: [...schema.types, { name: 'topic', id: 9, table: 'topics' }],
      mappings: [...schema.mappings, { name: 'topic_has_pins', from: 'topic', to: 'pin', table: 'topic_has_pins' }],
    };
    const backend = new SqliteBackend({ root, schema: newer });
    assert.equal((await backend.getObjects(ref, [{ table: 'pins', localId: pin.localId }]))[0]?.data, '{"a":1}');
    const topic = await backend.insertObject(ref, 'topics', '{"t":1}');
    await backend.addMapping(ref, 'topic_has_pins', 5n, 6n, 1);
    assert.equal(topic.localId, 1);
    assert.equal(await backend.countMappings(ref, 'topic_has_pins', 5n), 1);
    await backend.close();
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

/**
 * What is wrong with the plan of one mapping-page statement (empty: one range scan of `index`).
 * A statement whose ORDER BY the index does not deliver (a column outside it, mixed directions,
 * to_id before sequence) gets a "USE TEMP B-TREE FOR ORDER BY" step or another index; one that
 * does not constrain from_id (and, for a cursor page, the (sequence, to_id) row value) gets a SCAN.
 */
function mappingPagePlanProblems(db: Database.Database, sql: string, table: string, index: string, cursor: boolean): string[] {
  const params = (sql.match(/\?/g) ?? []).map(() => 1);
  const plan = (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as Array<{ detail: string }>).map((r) => r.detail);
  const problems: string[] = [];
  const range = cursor ? ' AND \\(sequence,to_id\\)[<>]\\(\\?,\\?\\)' : '';
  const search = new RegExp(`^SEARCH ${table} USING (COVERING )?INDEX ${index} \\(from_id=\\?${range}\\)$`);
  if (plan.length !== 1) problems.push(`${plan.length} plan steps`);
  if (!plan.some((d) => search.test(d))) problems.push(`no range search of ${index}`);
  if (plan.some((d) => /TEMP B-TREE/.test(d))) problems.push('sorts in a temp b-tree');
  if (plan.some((d) => /^SCAN\b/.test(d))) problems.push('full scan');
  return problems.map((p) => `${p}: ${JSON.stringify(plan)} for ${sql}`);
}

test('a mapping page is one range scan of the (from_id, sequence, to_id) index at any depth', async () => {
  const root = tempRoot();
  const ref = { host: 'h1', shard: 2, fleet: 'objects' as const };
  const table = 'board_has_pins';
  const prepare = Database.prototype.prepare;
  try {
    const writer = new SqliteBackend({ root, schema });
    try {
      for (let i = 1; i <= 6; i++) await writer.addMapping(ref, table, 1n, BigInt(100 + i), i % 3);
      await writer.addMapping(ref, table, 2n, 999n, 1);
    } finally {
      await writer.close();
    }
    // The statements the backend itself prepares (its SQL text is private), recorded at the one
    // place better-sqlite3 makes every statement. A second backend: its handle and statement
    // cache start empty, so each kind of page prepares its statement during the call.
    const backend = new SqliteBackend({ root, schema });
    const prepared: string[] = [];
    const used = new Map<string, string>();
    try {
      Database.prototype.prepare = function (this: Database.Database, source: string) {
        prepared.push(source);
        return prepare.call(this, source);
      } as typeof prepare;
      // (sequence, to_id) of from 1: (0,103) (0,106) (1,101) (1,104) (2,102) (2,105).
      const pages: Array<[string, Parameters<SqliteBackend['listMappings']>[3], bigint[]]> = [
        ['asc first page', { order: 'asc', limit: 2 }, [103n, 106n]],
        ['asc cursor page', { order: 'asc', limit: 2, after: { sequence: 1, toId: 101n } }, [104n, 102n]],
        ['desc first page', { order: 'desc', limit: 2 }, [105n, 102n]],
        ['desc cursor page', { order: 'desc', limit: 2, after: { sequence: 1, toId: 104n } }, [101n, 106n]],
      ];
      for (const [name, page, expected] of pages) {
        const before = prepared.length;
        const items = await backend.listMappings(ref, table, 1n, page);
        assert.deepEqual(items.map((item) => item.toId), expected, name);
        const mine = prepared.slice(before).filter((sql) => sql.includes(`"${table}"`));
        assert.equal(mine.length, 1, `${name} prepares one statement on ${table}: ${JSON.stringify(mine)}`);
        used.set(name, mine[0]!);
      }
    } finally {
      Database.prototype.prepare = prepare;
      await backend.close();
    }
    assert.equal(new Set(used.values()).size, 4, 'four different statements');

    const db = new Database(join(root, 'h1', 'db00002.sqlite'), { readonly: true });
    try {
      // The index over exactly (from_id, sequence, to_id), found by its columns, not its name.
      const indexes = db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ?").pluck().all(table) as string[];
      const pageIndexes = indexes.filter((name) =>
        JSON.stringify(db.prepare('SELECT name FROM pragma_index_info(?) ORDER BY seqno').pluck().all(name)) === '["from_id","sequence","to_id"]');
      assert.equal(pageIndexes.length, 1, JSON.stringify(indexes));
      const index = pageIndexes[0]!;
      for (const [name, sql] of used) {
        const cursor = name.includes('cursor');
        assert.deepEqual(mappingPagePlanProblems(db, sql, table, index, cursor), [], name);
        // The check itself catches an ORDER BY the index does not deliver and a missing range.
        const broken = [
          sql.replace(/ORDER BY .* LIMIT/, 'ORDER BY sequence ASC, to_id DESC LIMIT'),
          sql.replace(/ORDER BY .* LIMIT/, 'ORDER BY to_id LIMIT'),
          sql.replace(/ORDER BY .* LIMIT/, 'ORDER BY from_id + sequence LIMIT'),
          sql.replace('from_id = ?', 'from_id + 0 = ?'),
        ];
        // A cursor written as OR: still this index, but bounded by from_id only (every page starts at the first row).
        if (cursor) broken.push(sql.replace(/ AND \(sequence, to_id\) ([<>]) \(\?, \?\)/, ' AND (sequence $1 ? OR (sequence = ? AND to_id $1 ?))'));
        for (const b of broken) {
          assert.notEqual(b, sql, 'the mutation applies');
          assert.notDeepEqual(mappingPagePlanProblems(db, b, table, index, cursor), [], `${name}, broken: ${b}`);
        }
      }
    } finally {
      db.close();
    }
  } finally {
    Database.prototype.prepare = prepare;
    rmSync(root, { recursive: true, force: true });
  }
});

test('a second process writing the same shard waits for the lock instead of failing', async () => {
  const root = tempRoot();
  const a = new SqliteBackend({ root, schema });
  const b = new SqliteBackend({ root, schema });
  try {
    const ref = { host: 'h1', shard: 3, fleet: 'objects' as const };
    const o = await a.insertObject(ref, 'pins', '{"n":0}');
    const inc = (be: SqliteBackend) => be.updateObject(ref, 'pins', o.localId, (t) => JSON.stringify({ n: (JSON.parse(t) as { n: number }).n + 1 }));
    await Promise.all(Array.from({ length: 50 }, (_, i) => inc(i % 2 ? a : b)));
    assert.deepEqual(JSON.parse((await b.getObjects(ref, [{ table: 'pins', localId: o.localId }]))[0]!.data), { n: 50 });
  } finally {
    await a.close();
    await b.close();
    rmSync(root, { recursive: true, force: true });
  }
});

test('synchronous "full" (fsync per commit) creates and serves shards the same way', async () => {
  const root = tempRoot();
  const backend = new SqliteBackend({ root, schema, synchronous: 'full' });
  try {
    const ref = { host: 'h1', shard: 4, fleet: 'objects' as const };
    const o = await backend.insertObject(ref, 'pins', '{"durable":true}');
    assert.equal((await backend.getObjects(ref, [{ table: 'pins', localId: o.localId }]))[0]?.data, '{"durable":true}');
    assert.deepEqual(readdirSync(join(root, 'h1')).filter((f) => f.endsWith('.tmp')), [], 'no temp file is left behind');
  } finally {
    await backend.close();
    rmSync(root, { recursive: true, force: true });
  }
});
