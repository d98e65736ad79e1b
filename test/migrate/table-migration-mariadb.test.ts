import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readdirSync, rmSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import { fileURLToPath } from 'node:url';
import type mysql from 'mysql2/promise';
import { MariadbInstance } from '../../src/ops/mariadb/mariadb-instance.js';
import { ShardKit } from '../../src/kit/shard-kit.js';
import { ShardKitError } from '../../src/errors.js';
import { runTableMigration, type TableMigrationCliOptions } from '../../src/cli/actions/migrate-table.js';
import { openTableSource, parseSourceUrl, STATE_KEY, TableMigration } from '../../src/migrate/table/index.js';
import { captureIo, embeddedTarget, tempRoot } from './table-fixture.js';
import { shardkit } from '../mysql/helpers.js';

// One real MariaDB server holds the "old database" (`legacy`: boards and pins, the seed's case);
// the targets are embedded shardkit stores in temp dirs. The source user has no SUPER, so
// read_only really stops its writes (the --final fence).
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
let root: string;
let server: MariadbInstance;
let admin: mysql.Connection;
let url: string;

const PIN_QUERY = 'SELECT id, board_id, title, body, raw, views, updated_at FROM pins';
const BOARD_QUERY = 'SELECT id, name, updated_at FROM boards';

before(async () => {
  root = tempRoot('shardkit-migtable-');
  server = await MariadbInstance.create({ name: 'LEGACY', dir: join(root, 'server'), serverId: 1 });
  await server.init();
  await server.start();
  admin = await server.connect();
  for (const sql of [
    'CREATE DATABASE legacy',
    'CREATE TABLE legacy.boards (id INT PRIMARY KEY AUTO_INCREMENT, name VARCHAR(100) NOT NULL, updated_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6))',
    `CREATE TABLE legacy.pins (id BIGINT PRIMARY KEY AUTO_INCREMENT, board_id INT NULL, title VARCHAR(200) NOT NULL, body TEXT, raw VARBINARY(64),
       views BIGINT NOT NULL DEFAULT 0, updated_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6), KEY (updated_at))`,
    `CREATE TABLE legacy.kinds (id INT PRIMARY KEY, price DECIMAL(10,2), score DOUBLE, tiny TINYINT, big BIGINT UNSIGNED, day DATE, at DATETIME(3),
       meta JSON, doc TEXT, bin BLOB, changed INT NOT NULL)`,
    "CREATE USER 'legacy'@'%' IDENTIFIED BY 'pw'",
    "GRANT ALL ON legacy.* TO 'legacy'@'%'",
  ]) await admin.query(sql);
  url = `mysql://legacy:pw@127.0.0.1:${server.port}/legacy`;
  await admin.query("INSERT INTO legacy.boards (name) VALUES ('b1'), ('b2'), ('b3'), ('b4'), ('b5'), ('b6'), ('b7'), ('b8')");
  // 1500 pins: unicode, a NULL board, binary bytes, 64-bit counters.
  const values: string[] = [];
  for (let i = 1; i <= 1500; i++) {
    const board = i % 10 === 0 ? 'NULL' : String(1 + (i % 8));
    values.push(`(${board}, 'pin ${i} ✓ "q" \\\\ 🎉', ${i % 7 === 0 ? 'NULL' : `'body ${i}\\nline'`}, UNHEX('00ff${(i % 256).toString(16).padStart(2, '0')}'), ${9007199254740993n + BigInt(i)})`);
  }
  await admin.query(`INSERT INTO legacy.pins (board_id, title, body, raw, views) VALUES ${values.join(',')}`);
});

after(async () => {
  await admin?.end().catch(() => undefined);
  await server?.stop().catch(() => server.kill());
  rmSync(root, { recursive: true, force: true });
});

/** Rows of every `pins` table in the embedded target's shard files. */
function pinRows(dir: string): number {
  let n = 0;
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) n += pinRows(p);
    else if (name.endsWith('.sqlite')) {
      const db = new Database(p, { readonly: true });
      try {
        const has = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'pins'").get();
        if (has) n += (db.prepare('SELECT COUNT(*) AS n FROM pins').get() as { n: number }).n;
      } finally {
        db.close();
      }
    }
  }
  return n;
}

function pinOptions(to: string, extra: Partial<TableMigrationCliOptions> = {}): TableMigrationCliOptions {
  return { from: url, to, query: PIN_QUERY, type: 'pin', idColumn: 'id', changedColumn: 'updated_at', mapping: ['board_id:board_has_pins'], batch: 100, json: true, ...extra };
}

function boardOptions(to: string): TableMigrationCliOptions {
  return { from: url, to, query: BOARD_QUERY, type: 'board', idColumn: 'id', changedColumn: 'updated_at', batch: 100, json: true };
}

const migrate = (opts: TableMigrationCliOptions) => runTableMigration(opts, captureIo());

/**
 * The oracle: each source pin as the JSON text shardkit must hold, built here column by column
 * from what the server returns (independently of src/migrate/table's converter).
 */
async function expectedPins(): Promise<Map<string, string>> {
  const [rows] = await admin.query({ sql: "SET time_zone = '+00:00'" }).then(() => admin.query({
    sql: 'SELECT id, board_id, title, body, raw, CAST(views AS CHAR) AS views, DATE_FORMAT(updated_at, \'%Y-%m-%dT%H:%i:%s.%fZ\') AS updated_at FROM legacy.pins ORDER BY id',
    supportBigNumbers: true, bigNumberStrings: true,
  }));
  const out = new Map<string, string>();
  for (const r of rows as Array<Record<string, unknown>>) {
    out.set(String(r.id), JSON.stringify({
      board_id: r.board_id === null ? null : Number(r.board_id),
      title: r.title,
      body: r.body,
      raw: r.raw === null ? null : (r.raw as Buffer).toString('base64'),
      views: r.views,
      updated_at: r.updated_at,
    }));
  }
  return out;
}

/** Every source pin resolves through pin_old_id to an object holding exactly its row; mappings match board_id. */
async function assertAllCopied(to: string, keyspace = 'pin_old_id'): Promise<void> {
  const expected = await expectedPins();
  const kit = await ShardKit.open({ configPath: to });
  try {
    const ids = new Set<bigint>();
    const boardsOf = new Map<string, bigint[]>();
    const entries = [...expected];
    // Lookups 50 at a time, then one multi-get per 50: the check is not the slow part of the test.
    for (let i = 0; i < entries.length; i += 50) {
      const chunk = entries.slice(i, i + 50);
      const found = await Promise.all(chunk.map(([oldId]) => kit.lookups.get(keyspace, oldId)));
      found.forEach((id, k) => assert.ok(id !== undefined, `pin ${chunk[k]![0]} has no key in ${keyspace}`));
      const objects = await kit.objects.getMany(found as bigint[]);
      chunk.forEach(([oldId, text], k) => {
        const id = found[k]!;
        assert.ok(!ids.has(id), `two old ids resolve to ${id}`);
        ids.add(id);
        const obj = objects[k];
        assert.ok(obj !== undefined, `pin ${oldId}: object ${id} is missing`);
        assert.equal(obj.type, 'pin');
        assert.equal(obj.storedText, text, `pin ${oldId}: data differs from the source row`);
        const board = (JSON.parse(text) as { board_id: number | null }).board_id;
        if (board !== null && keyspace === 'pin_old_id') {
          const list = boardsOf.get(String(board)) ?? [];
          list.push(id);
          boardsOf.set(String(board), list);
        }
      });
    }
    for (const [oldBoard, pins] of boardsOf) {
      const boardId = (await kit.lookups.get('board_old_id', oldBoard))!;
      assert.equal(await kit.mappings.count('board_has_pins', boardId), pins.length, `board ${oldBoard}: mapping count`);
      const listed = new Set<bigint>();
      let cursor: string | null = null;
      do {
        const page = await kit.mappings.list('board_has_pins', boardId, { limit: 1000, cursor });
        for (const item of page.items) listed.add(item.id);
        cursor = page.next;
      } while (cursor !== null);
      for (const p of pins) assert.ok(listed.has(p), `board ${oldBoard} does not list pin ${p}`);
    }
  } finally {
    await kit.close();
  }
}

/** Inserts and updates on legacy.pins as the legacy user until stopped; counts what it did. */
function startWriter(conn: mysql.Connection): { stop(): Promise<{ inserts: number; updates: number }> } {
  let running = true;
  let inserts = 0;
  let updates = 0;
  let seed = 12345;
  const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const done = (async () => {
    while (running) {
      if (rnd() < 0.4) {
        await conn.query('INSERT INTO pins (board_id, title, body, raw, views) VALUES (?, ?, ?, ?, ?)', [1 + Math.floor(rnd() * 8), `new ${inserts}`, 'b', Buffer.from([1, 2, 3]), inserts]);
        inserts++;
      } else {
        const id = 1 + Math.floor(rnd() * 1500);
        // A move to another board now and then: the old board_has_pins pair must go.
        if (rnd() < 0.2) await conn.query('UPDATE pins SET board_id = ? WHERE id = ?', [1 + Math.floor(rnd() * 8), id]);
        else await conn.query('UPDATE pins SET title = CONCAT(title, \'+\'), views = views + 1 WHERE id = ?', [id]);
        updates++;
      }
    }
  })();
  return {
    async stop() {
      running = false;
      await done;
      return { inserts, updates };
    },
  };
}

describe('shardkit migrate from a MariaDB table', () => {
  test('under a write load: rounds copy the delta, --final needs read_only, then every row is there byte for byte and a rerun copies nothing', async () => {
    const to = embeddedTarget(root);
    const boards = await migrate(boardOptions(to));
    assert.equal(boards.created, 8);
    const { createConnection } = await import('mysql2/promise');
    const writerConn = await createConnection({ uri: url });
    const writer = startWriter(writerConn);
    let load: { inserts: number; updates: number };
    const rounds: Array<{ copied: number; scanned: number }> = [];
    try {
      const first = await migrate(pinOptions(to));
      assert.ok(first.created >= 1500, `first round created ${first.created}`);
      assert.equal(first.skipped, 0, JSON.stringify(first.skips.slice(0, 3)));
      rounds.push(first);
      for (let i = 0; i < 2; i++) rounds.push(await migrate(pinOptions(to)));
      // --final refuses while the source takes writes, and changes nothing.
      const before = rounds.length;
      await assert.rejects(migrate(pinOptions(to, { final: true })), (err: unknown) => err instanceof ShardKitError && err.code === 'PRECONDITION_FAILED' && /read_only = OFF/.test(err.message));
      assert.equal(rounds.length, before);
    } finally {
      load = await writer.stop();
    }
    assert.ok(load.inserts > 0 && load.updates > 0, `the writer wrote (${JSON.stringify(load)})`);
    await admin.query('SET GLOBAL read_only = ON');
    try {
      await assert.rejects(writerConn.query("UPDATE pins SET title = 'x' WHERE id = 1"), /read-only|READ_ONLY|read_only/i, 'the legacy user cannot write any more');
      const final = await migrate(pinOptions(to, { final: true }));
      assert.equal(final.final, true);
      assert.equal(final.verifyCopied, 0);
      assert.match(final.readOnly ?? '', /read_only = ON/);
      await assertAllCopied(to);
      const again = await migrate(pinOptions(to));
      assert.equal(again.copied, 0, 'a second run copies nothing');
      assert.equal(again.skipped, 0);
      assert.ok(again.unchanged > 0, 'it re-read the overlap and found it unchanged');
      const kit = await ShardKit.open({ configPath: to });
      try {
        const stateId = (await kit.lookups.get('pin_old_id', STATE_KEY))!;
        const state = (await kit.objects.get(stateId)).data as { finalAt: string | null; highWater: string };
        assert.ok(state.finalAt !== null, 'the state records the final pass');
      } finally {
        await kit.close();
      }
    } finally {
      await admin.query('SET GLOBAL read_only = OFF');
      await writerConn.end();
    }
  });

  test('kill -9 mid-run, then a rerun: every row byte for byte, nothing duplicated in the keyspace, and a third run copies nothing', async () => {
    const to = embeddedTarget(root);
    await migrate(boardOptions(to));
    const opts = pinOptions(to, { batch: 20, concurrency: 2, json: false });
    const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'test/migrate/migrate-table-child.ts'), JSON.stringify(opts)], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NODE_OPTIONS: '' } });
    let err = '';
    const killedAt = await new Promise<number>((resolve, reject) => {
      child.stderr!.on('data', (d: Buffer) => {
        err += d.toString();
        const done = [...err.matchAll(/"event":"progress","scanned":(\d+)/g)].map((m) => Number(m[1]));
        const last = done.at(-1) ?? 0;
        if (last >= 200 && child.exitCode === null) {
          child.kill('SIGKILL');
          resolve(last);
        }
      });
      child.once('exit', (code) => reject(new Error(`the migration ended (${code}) before it could be killed: ${err}`)));
    });
    await new Promise((r) => (child.exitCode !== null || child.signalCode !== null ? r(undefined) : child.once('exit', r)));
    assert.ok(killedAt >= 200 && killedAt < 1500);
    const rerun = await migrate(pinOptions(to));
    const [[{ n }]] = (await admin.query('SELECT COUNT(*) AS n FROM legacy.pins')) as unknown as [[{ n: number }]];
    // The killed run had written at least `killedAt` rows (a page is checkpointed after it is written).
    assert.ok(rerun.created > 0 && rerun.created <= Number(n) - killedAt, `the rerun resumed after what the killed run wrote (created ${rerun.created} of ${n}, killed after ${killedAt})`);
    assert.ok(rerun.highWater.before !== null, 'the killed run had checkpointed');
    await assertAllCopied(to);
    assert.equal((await migrate(pinOptions(to))).copied, 0);
    // What the kill can leave: objects inserted whose key was not yet written (at most one per
    // worker, --concurrency 2), unreachable through the keyspace. Counted in the shard files.
    const orphans = pinRows(dirname(to)) - Number(n);
    assert.ok(orphans >= 0 && orphans <= 2, `${orphans} unreachable pin objects after the kill`);
    process.stdout.write(`# kill -9 after ${killedAt} rows: ${orphans} unreachable object(s) left by the kill\n`);
  });

  test('column types: integers, 64-bit and DECIMAL as strings, dates as ISO text, binary as base64, JSON nested; malformed JSON and NULL ids are reported, not copied', async () => {
    await admin.query(`INSERT INTO legacy.kinds VALUES
      (1, 12.50, 0.1, -3, 18446744073709551615, '2026-11-25', '2026-11-25 09:10:07.123', '{"a": [1, "x"], "b": null}', '{"ok": true}', X'000102', 1),
      (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'not json {', NULL, 1),
      (3, 0, -1.5e300, 0, 0, '1999-01-01', '1999-01-01 00:00:00.000', '[]', '[1]', '', 2)`);
    const to = embeddedTarget(root);
    const io = captureIo();
    const report = await runTableMigration({
      from: url, to, type: 'pin', idColumn: 'id', changedColumn: 'changed', keyspace: 'pin2_old_id', jsonColumn: ['doc'], json: true,
      query: 'SELECT NULLIF(id, 3) AS id, price, score, tiny, big, day, at, meta, doc, bin, changed FROM kinds',
    }, io);
    assert.equal(report.created, 1);
    assert.deepEqual(report.skips.map((s) => [s.id, s.reason.replace(/:.*/, '')]), [['2', 'malformed JSON in column doc']]);
    assert.equal(report.untracked.count, 1);
    assert.match(report.untracked.examples[0]!, /id=NULL/);
    assert.match(io.err, /"event":"skip","id":"2","reason":"malformed JSON in column doc/);
    const kit = await ShardKit.open({ configPath: to });
    try {
      const obj = await kit.objects.get((await kit.lookups.get('pin2_old_id', '1'))!);
      assert.equal(obj.storedText, JSON.stringify({
        price: '12.50', score: 0.1, tiny: -3, big: '18446744073709551615', day: '2026-11-25', at: '2026-11-25T09:10:07.123',
        meta: { a: [1, 'x'], b: null }, doc: { ok: true }, bin: 'AAEC', changed: 1,
      }));
    } finally {
      await kit.close();
    }
  });

  test("the seed's table: pins(local_id, data TEXT holding JSON, ts) with --data-column data; malformed, non-object and reserved blobs are skipped with their reason", async () => {
    await admin.query('CREATE TABLE legacy.seed_pins (local_id INT PRIMARY KEY AUTO_INCREMENT, data TEXT, ts TIMESTAMP DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP)');
    const blobs = ['{"details": "it\'s here", "link": "http://x.y/1", "n": 7}', '{ "spaced" :  [1, 2, {"deep": "é"}] }', '{"broken": ', '[1, 2]', '{"active": false}', '{"a": 1}'];
    for (const b of blobs) await admin.query('INSERT INTO legacy.seed_pins (data) VALUES (?)', [b]);
    const to = embeddedTarget(root);
    const report = await migrate({ from: url, to, query: 'SELECT local_id, data, ts FROM seed_pins', type: 'pin', idColumn: 'local_id', changedColumn: 'ts', dataColumn: 'data', keyspace: 'pin2_old_id', json: true });
    assert.equal(report.created, 3);
    assert.deepEqual(report.skips.map((x) => x.id).sort(), ['3', '4', '5']);
    assert.match(report.skips.find((x) => x.id === '3')!.reason, /malformed JSON in column data/);
    assert.match(report.skips.find((x) => x.id === '4')!.reason, /not an object/);
    assert.match(report.skips.find((x) => x.id === '5')!.reason, /active is reserved/);
    const kit = await ShardKit.open({ configPath: to });
    try {
      for (const [old, blob] of [['1', blobs[0]!], ['2', blobs[1]!], ['6', blobs[5]!]] as const) {
        const obj = await kit.objects.get((await kit.lookups.get('pin2_old_id', old))!);
        // The blob's JSON value, stored compactly (whitespace is not kept).
        assert.equal(obj.storedText, JSON.stringify(JSON.parse(blob)));
      }
    } finally {
      await kit.close();
    }
  });

  test('a first run that dies inside its first page (a target write fails after some rows) can be run again: its keys are its own', async () => {
    const to = embeddedTarget(root);
    await migrate(boardOptions(to));
    const kit = await ShardKit.open({ configPath: to });
    const source = await openTableSource(parseSourceUrl(url), PIN_QUERY);
    try {
      // Fault injection on the kit object (the servers are real): the 5th key write fails.
      const put = kit.lookups.put.bind(kit.lookups);
      let calls = 0;
      kit.lookups.put = async (...args: Parameters<typeof put>) => {
        if (++calls === 5) throw new Error('injected: the target went away');
        return put(...args);
      };
      const options = { type: 'pin', idColumn: 'id', changedColumn: 'updated_at', mappings: [{ column: 'board_id', mapping: 'board_has_pins' }], batch: 100, concurrency: 1 };
      await assert.rejects(new TableMigration(kit, source, 'legacy', PIN_QUERY, options).run(), /injected/);
      assert.ok(calls >= 5);
      kit.lookups.put = put;
      const rerun = await new TableMigration(kit, source, 'legacy', PIN_QUERY, options).run();
      assert.equal(rerun.skipped, 0);
      assert.ok(rerun.unchanged >= 3, 'the rows the first run wrote are found, not refused');
    } finally {
      await source.close();
      await kit.close();
    }
    await assertAllCopied(to);
  });

  test('equal change values at the boundary: a row written later with the high-water value itself is copied (>=, not >), overlap 0', async () => {
    await admin.query('CREATE TABLE legacy.versions (id INT PRIMARY KEY, v INT NOT NULL, note VARCHAR(20))');
    await admin.query("INSERT INTO legacy.versions VALUES (1, 1, 'a'), (2, 2, 'b'), (3, 2, 'c')");
    const to = embeddedTarget(root);
    const opts: TableMigrationCliOptions = { from: url, to, query: 'SELECT id, v, note FROM versions', type: 'pin', idColumn: 'id', changedColumn: 'v', keyspace: 'pin2_old_id', overlap: 0, batch: 2, json: true };
    const first = await migrate(opts);
    assert.equal(first.created, 3);
    assert.equal(first.highWater.after, '2');
    // Same change value as the mark, a lower id than the last row read, and an update in place.
    await admin.query("INSERT INTO legacy.versions VALUES (0, 2, 'late')");
    await admin.query("UPDATE legacy.versions SET note = 'b2' WHERE id = 2");
    const second = await migrate(opts);
    assert.equal(second.highWater.readFrom, '2');
    assert.deepEqual([second.created, second.updated, second.unchanged], [1, 1, 1]);
    assert.equal((await migrate(opts)).copied, 0);
  });

  test('interrupted (SIGINT) after a page: the report says so, the state holds the page, and the next run goes on from there', async () => {
    const to = embeddedTarget(root);
    await migrate(boardOptions(to));
    const controller = new AbortController();
    const io = captureIo();
    io.signal = controller.signal;
    const stderr = io.stderr.bind(io);
    io.stderr = (t: string) => {
      stderr(t);
      if (t.includes('"event":"progress"')) controller.abort();
    };
    const [[{ n }]] = (await admin.query('SELECT COUNT(*) AS n FROM legacy.pins')) as unknown as [[{ n: number }]];
    try {
      const stopped = await runTableMigration(pinOptions(to, { batch: 100 }), io);
      assert.equal(stopped.interrupted, true);
      assert.equal(stopped.scanned, 100, 'it stopped after the page it was writing');
      assert.equal(process.exitCode, 130);
      const rest = await migrate(pinOptions(to));
      assert.equal(rest.interrupted, false);
      assert.equal(stopped.created + rest.created, Number(n), 'together they created every row once');
    } finally {
      process.exitCode = undefined;
    }
    await assertAllCopied(to);
  });

  // Through the real CLI once `shardkit migrate` (src/cli/commands/migrate.ts) is in the tree:
  // it hands mysql://, mariadb:// and postgres:// sources to runTableMigration.
  test('the CLI: shardkit migrate --from mysql://... copies and prints one JSON report; a query without the id column is one line, exit 2', async () => {
    const to = embeddedTarget(root);
    const args = ['migrate', '--from', url, '--to', to, '--query', BOARD_QUERY, '--type', 'board', '--id-column', 'id', '--changed-column', 'updated_at', '--json'];
    const ok = await shardkit(args);
    assert.equal(ok.code, 0, ok.stderr);
    const report = JSON.parse(ok.stdout) as { created: number; copied: number };
    assert.equal(report.created, 8);
    const again = await shardkit(args);
    assert.equal((JSON.parse(again.stdout) as { copied: number }).copied, 0);
    const bad = await shardkit(['migrate', '--from', url, '--to', to, '--query', 'SELECT name, updated_at FROM boards', '--type', 'board', '--id-column', 'id', '--changed-column', 'updated_at']);
    assert.equal(bad.code, 2);
    assert.equal(bad.stderr.trim().split('\n').length, 1, bad.stderr);
    assert.match(bad.stderr, /^shardkit: INVALID_ARGUMENT: the query returns no column id/);
  });

  test('bad input: one clear error each, and the target is left as it was', async () => {
    const to = embeddedTarget(root);
    const cases: Array<[Partial<TableMigrationCliOptions>, string, RegExp]> = [
      [{ from: 'redis://127.0.0.1/0' }, 'INVALID_ARGUMENT', /unsupported scheme/],
      [{ from: 'mysql//nohost' }, 'INVALID_ARGUMENT', /not a URL/],
      [{ from: `mysql://legacy:pw@127.0.0.1:${server.port}/` }, 'INVALID_ARGUMENT', /one database/],
      [{ query: 'SELECT board_id, title, updated_at FROM pins' }, 'INVALID_ARGUMENT', /no column id \(--id-column\); it returns board_id, title, updated_at/],
      [{ query: 'SELECT id, title FROM pins', mapping: [] }, 'INVALID_ARGUMENT', /no column updated_at \(--changed-column\)/],
      [{ query: 'SELEC id FROM pins' }, 'INVALID_ARGUMENT', /the source refused the query/],
      [{ type: 'photo' }, 'UNKNOWN_TYPE', /--type photo/],
      [{ mapping: ['board_id:pin_owned_by_board'] }, 'INVALID_ARGUMENT', /goes from pin to board, not to pin/],
      [{ mapping: ['board_id:user_likes_pins'] }, 'UNKNOWN_KEYSPACE', /no keyspace user_old_id/],
      [{ mapping: ['board_id'] }, 'INVALID_ARGUMENT', /COLUMN:MAPPING/],
      [{ keyspace: 'email' }, 'ALREADY_EXISTS', /already maps ids of this source/],
      [{ changedColumn: 'title', mapping: [] }, 'INVALID_ARGUMENT', /must be a timestamp/],
      [{ final: true }, 'PRECONDITION_FAILED', /needs a read-only source, and it takes writes \(@@GLOBAL.read_only = OFF\)/],
    ];
    // A keyspace that already holds some of these ids, not written by a migration.
    const kit = await ShardKit.open({ configPath: to });
    const stranger = await kit.objects.create('user', { name: 'someone' });
    await kit.lookups.put('email', '1', stranger.id);
    await kit.close();
    for (const [extra, code, message] of cases) {
      await assert.rejects(migrate(pinOptions(to, extra)), (err: unknown) => {
        assert.ok(err instanceof ShardKitError, `${JSON.stringify(extra)}: ${String(err)}`);
        assert.equal(err.code, code, `${JSON.stringify(extra)}: ${err.message}`);
        assert.match(err.message, message);
        assert.ok(!err.message.includes('\n'), 'one line');
        return true;
      });
    }
    const check = await ShardKit.open({ configPath: to });
    try {
      assert.equal(await check.lookups.get('pin_old_id', STATE_KEY), undefined, 'no state was written');
      assert.equal(await check.lookups.get('email', STATE_KEY), undefined);
      assert.equal(await check.lookups.get('pin_old_id', '1'), undefined, 'no row was copied');
      assert.equal(await check.lookups.get('email', '1'), stranger.id, 'the stranger key is untouched');
    } finally {
      await check.close();
    }
    // A wrong password fails as an operational error (exit 1), before anything is written.
    await assert.rejects(migrate(pinOptions(to, { from: `mysql://legacy:nope@127.0.0.1:${server.port}/legacy` })), /cannot connect to the source/);
  });
});
