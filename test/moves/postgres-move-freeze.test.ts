/**
 * Issue #29 on PostgreSQL (real dev cluster: object shards 0..7 on PG001A, then `dev add-pair`):
 * a freeze whose length does not grow with the data, and a freeze that starts only when it fits.
 * - A table written throughout the move (a writer creating pins on the moving shards) is compared
 *   chunk by chunk before the freeze; under the freeze only its open chunks (the hot end) are
 *   read, never a whole table; every acknowledged write is on the target (ledger) and the full
 *   verify after the switch is clean.
 * - A row changed by hand on the target in an old chunk of such a table is found before the
 *   freeze: the move aborts with nothing frozen.
 * - The admission check: a transaction holding a lock on a moving table (which the fence's LOCK
 *   TABLE would wait for) keeps the freeze from starting, named in the admission events; the move
 *   gives up with nothing frozen when it stays open, and goes through once it ends.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { resolveSchema } from '../../src/config/config.js';
import { isShardKitError } from '../../src/errors.js';
import { ShardKit } from '../../src/kit/shard-kit.js';
import type { CopyWait } from '../../src/moves/copy-throttle.js';
import { runMove, type MoveEvent } from '../../src/moves/move-runner.js';
import { createPostgresMoveEngine, POSTGRES_MOVE_MAX_LAG_BYTES, type PostgresMoveEngine } from '../../src/moves/postgres/index.js';
import { devClusterDown, devUp, DevCluster } from '../../src/ops/dev-cluster.js';
import { devAddPair } from '../../src/ops/dev/dev-add-pair.js';
import { pgServer } from '../../src/ops/dev/dev-postgres.js';
import { createTopologyStore } from '../../src/topology/index.js';
import type { TopologyStore } from '../../src/topology/topology-store.js';
import { assertBadInput, cli, ensureBuilt } from '../cli/cli-harness.js';

const db = (shard: number) => `db${String(shard).padStart(5, '0')}`;
const SOURCE = 'PG001A';
/** Rows put into each moving shard's pins before the move: several chunks (chunk-settle.ts: 1000 rows each). */
const ROWS = 5000;

describe('PostgreSQL moves: the check under the freeze reads what was written lately, and the freeze starts only when it fits (real PostgreSQL 15)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-pgfreeze-'));
  const configPath = join(dir, 'shardkit.json');
  let c: DevCluster;
  let kit: ShardKit;
  let target: { master: string; slave: string };
  const stores: TopologyStore[] = [];
  const engines: PostgresMoveEngine[] = [];
  const sql = async <T extends Record<string, unknown>>(host: string, text: string, values: unknown[] = []) => pgServer(c, host).sql<T>(text, values, 'shardkit');
  const config = () => {
    const x = c.config();
    if (x.storage.backend !== 'postgres') throw new Error('not a postgres config');
    return { ...x, storage: x.storage };
  };
  const engine = (onStep?: (name: string, ms: number) => void, more: { maxBytesRate?: number; maxSourceStandbyLagBytes?: number; onCopyWait?: (w: CopyWait) => void } = {}): PostgresMoveEngine => {
    const x = config();
    const e = createPostgresMoveEngine({ hosts: x.hosts, user: x.storage.user, database: x.storage.database, schema: resolveSchema(x), ...(onStep !== undefined ? { onStep } : {}), ...more });
    engines.push(e);
    return e;
  };
  const store = (): TopologyStore => {
    const s = createTopologyStore(c.config().topologyStore, { dataDir: dir });
    stores.push(s);
    return s;
  };
  const hosts = () => Object.keys(c.config().hosts);
  const fill = async (shard: number) => {
    await sql(SOURCE, `INSERT INTO ${db(shard)}.pins (data, ts) SELECT '{"g":' || g || '}', g FROM generate_series(1, ${ROWS}) g`);
  };
  /**
   * `loops` writers creating pins on `shards` until stopped; every acknowledged id in `acked`.
   * Several at once, so that a table is written throughout even on a loaded machine: with one
   * loop starved beside other test files, a settle round once saw no write, every chunk settled,
   * and nothing was left open for the freeze to compare.
   */
  const writer = (shards: number[], loops = 4) => {
    const acked: string[] = [];
    let refused = 0;
    let on = true;
    const done = Promise.all(Array.from({ length: loops }, async (_, l) => {
      for (let i = l; on; i += loops) {
        try {
          acked.push((await kit.objects.create('pin', { w: i }, { shard: shards[i % shards.length]! })).id.toString());
        } catch (err) {
          if (!isShardKitError(err, 'SHARD_MOVING')) throw err;
          refused++;
        }
      }
    }));
    return { acked, refused: () => refused, stop: async () => { on = false; await done; } };
  };

  /** One pin on each of `shards`' tables on the source, its table's write counters published before this returns (pg_stat_force_next_flush). */
  const publishedWrite = async (shards: number[]) => {
    const cfg = config();
    const h = cfg.hosts[SOURCE]!;
    const x = new pg.Client({ host: h.host, port: h.port, user: cfg.storage.user, database: cfg.storage.database });
    await x.connect();
    try {
      await x.query('SELECT pg_stat_force_next_flush()');
      for (const s of shards) await x.query(`INSERT INTO ${db(s)}.pins (data, ts) VALUES ('{"published":true}', 1)`);
      await x.query('SELECT pg_stat_force_next_flush()');
      await x.query('SELECT 1');
    } finally {
      await x.end();
    }
  };

  before(async () => {
    ensureBuilt();
    await devUp({ dir, engine: 'postgres', pairs: 1, shards: 8, modShards: 2 });
    const added = await devAddPair(dir);
    target = { master: added.master, slave: added.slave };
    c = DevCluster.require(dir);
    kit = await ShardKit.open({ configPath, dataDir: dir });
    for (const s of [0, 1, 4]) await fill(s);
    // Shard 5: ~15 MB of rows for the copy's rate limit.
    await sql(SOURCE, `INSERT INTO ${db(5)}.pins (data, ts) SELECT repeat(md5(g::text), 8), g FROM generate_series(1, 50000) g`);
  });
  after(async () => {
    await kit?.close();
    for (const e of engines) await e.close();
    for (const s of stores) await s.close();
    try {
      const cl = DevCluster.open(dir);
      if (cl) await devClusterDown(cl);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('a table written throughout: compared chunk by chunk before the freeze, only its open chunks under it (never a whole table); every acknowledged write is on the target and the fenced copy is there row for row', async () => {
    const events: MoveEvent[] = [];
    const frozen: Array<[string, number]> = [];
    const before: Array<[string, number]> = [];
    const underFreeze = () => events.some((e) => e.phase === 'frozen') && !events.some((e) => e.phase === 'switched');
    const e = engine((name, ms) => (underFreeze() ? frozen : before).push([name, ms]));
    const w = writer([0, 1]);
    let result;
    try {
      result = await runMove({
        store: store(), engine: e, hosts: hosts(), maxLag: POSTGRES_MOVE_MAX_LAG_BYTES, start: { span: { first: 0, last: 1 }, target, holdMs: 10_000 },
        onEvent: (x) => events.push(x),
        // Both pins tables written after prepare, with the counters published (the services'
        // sessions publish theirs within a second): the comparison before the freeze knows them.
        afterPhase: (phase) => (phase === 'copied' ? publishedWrite([0, 1]) : undefined),
      });
    } finally {
      await w.stop();
    }
    assert.equal(result.outcome, 'switched');
    const names = frozen.map(([n]) => n);
    assert.ok(!names.includes('verify: table aggregates both sides'), `no whole table compared under the freeze: ${names.join(', ')}`);
    assert.ok(names.includes('fence: open chunks (source)') && names.includes('verify: open chunks (target)'), 'the open chunks are, on both sides');
    // Tables written since prepare are not compared whole (three whole reads to find them written again).
    const known = before.find(([n]) => n === 'verify before the freeze: tables written since prepare, not read whole (count)');
    assert.equal(known?.[1], 2, 'the two pins tables, known to be written, were left to the chunk settle at once');
    const left = before.find(([n]) => n === 'settle: chunks left for the freeze (count)');
    assert.ok(left !== undefined, 'the pins tables written throughout were compared chunk by chunk before the freeze');
    // Two pins tables of 5000+ rows (6 chunks each): what is left open is their hot ends.
    assert.ok(left[1] >= 1 && left[1] <= 4, `open chunks left for the freeze: ${left[1]}`);
    const rowsRead = frozen.find(([n]) => n === 'verify: open chunk rows (count)')?.[1];
    assert.ok(rowsRead !== undefined && rowsRead < ROWS, `rows read under the freeze (${rowsRead}) are the hot end, not the ${ROWS * 2}+ rows of the tables`);
    // The ledger: every acknowledged create reads back, from the target.
    assert.ok(w.acked.length > 0);
    for (const id of w.acked) await kit.objects.get(id);
    const onTarget = await sql<{ n: string }>(target.master, `SELECT (SELECT count(*) FROM ${db(0)}.pins) + (SELECT count(*) FROM ${db(1)}.pins) AS n`);
    assert.equal(Number(onTarget[0]!.n), ROWS * 2 + w.acked.length + 2, 'the filled rows, every acknowledged write and the two published ones, nothing else');
    // The fenced source copy, row for row, is on the target (which has the writes made after the switch besides).
    for (const s of [0, 1]) {
      const rows = async (host: string, ns: string) => new Map((await sql<{ id: string; d: string }>(host, `SELECT local_id::text AS id, data || ' ' || ts AS d FROM ${ns}.pins`)).map((r) => [r.id, r.d]));
      const [fenced, moved] = [await rows(SOURCE, `${db(s)}_moved`), await rows(target.master, db(s))];
      assert.ok(fenced.size >= ROWS);
      for (const [id, d] of fenced) assert.equal(moved.get(id), d, `shard ${s} row ${id}`);
    }
  });

  test('a row changed by hand on the target in an old chunk of a table written throughout is found before the freeze: the move aborts with nothing frozen', async () => {
    const events: MoveEvent[] = [];
    const s = store();
    const w = writer([4]);
    try {
      await assert.rejects(
        runMove({
          store: s, engine: engine(), hosts: hosts(), maxLag: POSTGRES_MOVE_MAX_LAG_BYTES, start: { span: { first: 4, last: 4 }, target },
          onEvent: (x) => events.push(x),
          afterPhase: async (phase) => {
            if (phase === 'copied') await sql(target.master, `UPDATE ${db(4)}.pins SET data = '{"by":"hand"}' WHERE local_id = 10`);
          },
        }),
        (err) => isShardKitError(err) && /verify found \d+ mismatching chunk.*first: shard 4 pins keys 10\.\.10,/.test(err.message) && /back on PG001A/.test(err.message),
      );
    } finally {
      await w.stop();
    }
    assert.deepEqual(events.filter((x) => x.phase === 'frozen' || x.phase === 'fenced'), [], 'never frozen, never fenced');
    assert.equal((await s.read())!.locate(4).master, SOURCE);
    for (const id of w.acked) await kit.objects.get(id);
  });

  test('admission: a transaction holding a moving table keeps the freeze from starting (named in the admission events); the move gives up with nothing frozen, and goes through once it ends', async () => {
    const x = config();
    const h = x.hosts[SOURCE]!;
    const t = new pg.Client({ host: h.host, port: h.port, user: x.storage.user, database: x.storage.database });
    await t.connect();
    try {
      const hold = async (phase: string) => {
        if (phase !== 'copied') return;
        await t.query('BEGIN');
        await t.query(`INSERT INTO ${db(2)}.pins (data, ts) VALUES ('{"held":1}', 0)`);
        // The admission check counts a transaction by its age: wait until it is past the budget.
        const pid = (await t.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
        while ((await sql<{ old: boolean }>(SOURCE, "SELECT clock_timestamp() - xact_start > interval '1 second' AS old FROM pg_stat_activity WHERE pid = $1", [pid]))[0]?.old !== true) {
          await new Promise((r) => setTimeout(r, 50));
        }
      };
      // Held throughout: refused after lagWaitMs, never frozen.
      const events: MoveEvent[] = [];
      await assert.rejects(
        runMove({ store: store(), engine: engine(), hosts: hosts(), maxLag: POSTGRES_MOVE_MAX_LAG_BYTES, start: { span: { first: 2, last: 2 }, target }, lagWaitMs: 3000, onEvent: (e) => events.push(e), afterPhase: hold }),
        (err) => isShardKitError(err, 'SHARD_UNAVAILABLE') && /the freeze would take about \d+ ms on the hosts now \(.*fence locks \d+ ms \(transaction pid \d+/.test(err.message) && /budget of 400 ms/.test(err.message),
      );
      assert.deepEqual(events.filter((e) => e.phase === 'frozen'), [], 'never frozen');
      await t.query('COMMIT');

      // Ended once the admission check has waited for it: the freeze starts after that, and the move switches.
      const events2: MoveEvent[] = [];
      let committed = false;
      const result = await runMove({
        store: store(), engine: engine(), hosts: hosts(), maxLag: POSTGRES_MOVE_MAX_LAG_BYTES, start: { span: { first: 2, last: 2 }, target }, afterPhase: hold,
        onEvent: (e) => {
          events2.push(e);
          if (e.phase === 'copied' && e.detail?.admission !== undefined && !committed) {
            committed = true;
            void t.query('COMMIT');
          }
        },
      });
      assert.equal(result.outcome, 'switched');
      const waited = events2.findIndex((e) => e.detail?.admission !== undefined);
      assert.ok(waited >= 0 && waited < events2.findIndex((e) => e.phase === 'frozen'), 'the admission check waited before the freeze');
      assert.match(JSON.stringify(events2[waited]!.detail), /transaction pid \d+/);
      const held = await sql<{ n: string }>(target.master, `SELECT count(*)::text AS n FROM ${db(2)}.pins WHERE data = '{"held":1}'`);
      assert.equal(held[0]!.n, '2', 'both held rows (committed after each admission wait) are on the target');
    } finally {
      await t.end();
    }
  });

  test('--max-rate in bytes per second holds the PostgreSQL copy: the bytes copied never run ahead of rate x time since the move started', async () => {
    const rate = 4_000_000;
    const seen: Array<{ ms: number; bytes: number }> = [];
    const t0 = performance.now();
    const result = await runMove({
      store: store(), engine: engine(undefined, { maxBytesRate: rate }), hosts: hosts(), maxLag: POSTGRES_MOVE_MAX_LAG_BYTES, start: { span: { first: 5, last: 5 }, target },
      onProgress: (_done, _total, rows) => {
        if (rows?.bytesCopied !== undefined) seen.push({ ms: performance.now() - t0, bytes: rows.bytesCopied });
      },
    });
    assert.equal(result.outcome, 'switched');
    const last = seen.at(-1)!;
    assert.ok(last.bytes > 10_000_000, `the copy streamed ${last.bytes} bytes`);
    // Each of the 4 streams counts a piece before the throttle lets it through: 4 pieces of slack.
    for (const s of seen) assert.ok(s.bytes <= (rate * s.ms) / 1000 + 4 * 65_536, `${s.bytes} bytes after ${Math.round(s.ms)} ms is ahead of ${rate} bytes/s`);

    // Rows per second on PostgreSQL, or a rate that is neither: one line, exit 2, nothing changed.
    const before = (await kit.shardMap()).toJSON();
    assertBadInput(await cli(['shards', 'move', '6..6', '--to', target.master, '--to-slave', target.slave, '--max-rate', '5000', '--dir', dir]), 'rows/s on PostgreSQL', /--max-rate on PostgreSQL is bytes per second/);
    assertBadInput(await cli(['shards', 'move', '6..6', '--to', target.master, '--max-rate', '20MB/min', '--dir', dir]), 'a rate in no unit', /--max-rate must be rows per second .* or bytes per second/);
    assert.deepEqual((await kit.shardMap()).toJSON(), before);
  });

  test('the copy waits while the source\'s standby is further behind than the bound (its replay paused behind ~2 MB of WAL), and goes on once it has caught up', async () => {
    const standby = (await kit.shardMap()).locate(7).slave!;
    const bound = 256 * 1024;
    const waits: CopyWait[] = [];
    const events: MoveEvent[] = [];
    let waited!: () => void;
    const firstWait = new Promise<void>((r) => { waited = r; });
    await sql(standby, 'SELECT pg_wal_replay_pause()');
    let moving: ReturnType<typeof runMove> | undefined;
    try {
      await sql(SOURCE, `INSERT INTO ${db(7)}.pins (data, ts) SELECT repeat(md5(g::text), 8), g FROM generate_series(1, 5000) g`);
      moving = runMove({
        store: store(), hosts: hosts(), maxLag: POSTGRES_MOVE_MAX_LAG_BYTES, start: { span: { first: 7, last: 7 }, target }, onEvent: (e) => events.push(e),
        engine: engine(undefined, { maxSourceStandbyLagBytes: bound, onCopyWait: (w) => { waits.push(w); waited(); } }),
      });
      // Without the gate the move switches without ever waiting: said in one line, not a hang.
      await Promise.race([firstWait, moving.then(() => { throw new Error('the move finished without waiting for the source\'s standby'); })]);
      assert.deepEqual({ why: waits[0]!.why, bound: (waits[0] as { bound?: number }).bound }, { why: 'lag', bound });
      assert.ok((waits[0] as { lag: number }).lag > bound, `lag ${(waits[0] as { lag: number }).lag} bytes`);
      assert.equal(events.some((e) => e.phase === 'copied'), false, 'the copy went on while the standby was behind');
    } finally {
      await sql(standby, 'SELECT pg_wal_replay_resume()');
    }
    const result = await moving;
    assert.equal(result.outcome, 'switched');
    assert.ok(waits.every((w) => w.why === 'lag'), JSON.stringify(waits.slice(0, 3)));
    const [n] = await sql<{ n: string }>(target.master, `SELECT count(*) AS n FROM ${db(7)}.pins`);
    assert.equal(Number(n!.n), 5000);
    // A transaction count on PostgreSQL: one line, exit 2, nothing changed.
    const map = (await kit.shardMap()).toJSON();
    assertBadInput(await cli(['shards', 'move', '6..6', '--to', target.master, '--to-slave', target.slave, '--max-source-lag', '1000', '--dir', dir]), 'transactions on PostgreSQL', /--max-source-lag on PostgreSQL is bytes of WAL/);
    assert.deepEqual((await kit.shardMap()).toJSON(), map);
  });
});
