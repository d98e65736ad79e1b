/**
 * The MariaDB move engine on a real dev cluster (2 pairs, shards 0..3 on MySQL001A, 4..7 on MySQL002A):
 * - a move of shards 0..1 while writers keep a ledger of acknowledged creates on shards 0..3:
 *   every acknowledged write on a moved shard is on the target, nothing lands on the source after
 *   the fence, the source's other shards never appear on the target, ids continue past the source's;
 * - a transaction held open on a moving shard across the freeze commits before the fence and is copied;
 * - a failure before the switch (here: thrown after the fence) returns the range to the source;
 * - bad input (target is the source, unknown host) is refused with nothing changed.
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import mysql from 'mysql2/promise';
import { isShardKitError } from '../../src/errors.js';
import { ShardKit } from '../../src/kit/shard-kit.js';
import { pinterestId } from '../../src/ids/pinterest-id.js';
import { MysqlBackend } from '../../src/storage/mysql/index.js';
import { resolveSchema } from '../../src/config/config.js';
import { fleetTables } from '../../src/storage/shard-names.js';
import { MemoryTopologyBacking, MemoryTopologyStore } from '../../src/topology/memory/memory-topology-store.js';
import { ShardMap, type ShardMapJson } from '../../src/topology/shard-map.js';
import { runMove } from '../../src/moves/move-runner.js';
import { addMove } from '../../src/moves/move-state.js';
import { createMariadbMoveEngine, FENCE_DOMAIN_ID, type MariadbMoveEngine } from '../../src/moves/mariadb/index.js';
import { MariadbReplicatedMoveEngine } from '../../src/moves/mariadb/replicated-engine.js';
import { startTestCluster } from '../mysql/cluster-fixture.js';
import { adminProbe, userConnection, userProbe } from './mariadb-probe.js';
import { devHostAdmin, type HostAdmin } from '../../src/ops/failover/host-admin.js';
import { gtidWait } from '../../src/ops/failover/index.js';
import { moveAdmin } from '../../src/moves/mariadb/move-admin.js';
import type { MoveEvent } from '../../src/moves/move-runner.js';
// The built binary, as before: these movers run against MariaDB servers (cli() would run them in this process).
import { CLI, assertBadInput, cliProcess as cli, ensureBuilt } from '../cli/cli-harness.js';
import { killMoverAfter } from './kill-mover.js';

const db = (shard: number) => `db${String(shard).padStart(5, '0')}`;
const SOURCE = 'MySQL001A';
const TARGET = { master: 'MySQL002A', slave: 'MySQL002B' };

describe('moves on MariaDB: the mover', () => {
  let stop: () => Promise<void>;
  let hosts: Record<string, { host: string; port: number }>;
  let storage: { user: string; password?: string };
  let engine: MariadbMoveEngine;
  let admin: HostAdmin;
  let backing: MemoryTopologyBacking;
  let kit: ShardKit;
  let backend: MysqlBackend;
  let objectTables: string[];
  let clusterDir: string;
  let configPath: string;
  let cluster: Awaited<ReturnType<typeof startTestCluster>>['cluster'];
  const stores: MemoryTopologyStore[] = [];
  const hostNames = () => Object.keys(hosts);
  const store = () => {
    const s = new MemoryTopologyStore({ backing });
    stores.push(s);
    return s;
  };
  const { query, tablesIn, ids } = userProbe(() => hosts, () => storage);

  /** One write on `host` that fails (lock_wait_timeout) rather than waits for ever if the tables are still locked. */
  const writeWithin = async (host: string, sql: string): Promise<void> => {
    const c = await userConnection(hosts, storage, host);
    try {
      await c.query('SET SESSION lock_wait_timeout = 20');
      await c.query(sql);
    } finally {
      await c.end();
    }
  };
  const { query: adminQuery, tablesIn: adminTablesIn, moveConnections } = adminProbe(() => admin);

  before(async () => {
    const started = await startTestCluster({ pairs: 2, shards: 8, prefix: 'shardkit-mariamove-' });
    stop = started.stop;
    clusterDir = started.dir;
    configPath = started.cluster.configPath;
    cluster = started.cluster;
    ensureBuilt();
    const config = started.cluster.config();
    if (config.storage.backend !== 'mysql') throw new Error('dev cluster config is not mysql');
    storage = { user: config.storage.user, ...(config.storage.password !== undefined ? { password: config.storage.password } : {}) };
    hosts = Object.fromEntries(Object.entries(config.hosts).map(([name, h]) => [name, { host: h.host!, port: h.port! }]));
    const schema = resolveSchema(config);
    objectTables = fleetTables(schema, 'objects');
    admin = devHostAdmin(started.cluster);
    engine = createMariadbMoveEngine({ hosts, ...storage, tables: objectTables, admin: moveAdmin(admin) });
    backing = new MemoryTopologyBacking(ShardMap.fromJSON(config.shardMap as ShardMapJson));
    backend = new MysqlBackend({ hosts, storage, schema });
    kit = new ShardKit({ backend, schema, topology: store() });
    await kit.ready();
  });
  after(async () => {
    await kit?.close();
    for (const s of stores) await s.close();
    await stop?.();
  });

  test('a move under concurrent writers: every acknowledged write is on the target, none on the source after the fence, other shards stay', async () => {
    // Rows before the move, so the copy has something to carry.
    for (let s = 0; s <= 3; s++) for (let i = 0; i < 20; i++) await kit.objects.create('pin', { s, i }, { shard: s });
    // Mod-shard (lookup) tables share the database of object shard 0 on the source: they must stay.
    const lookupTables = (await tablesIn(SOURCE, db(0))).filter((t) => !objectTables.includes(t));
    assert.ok(lookupTables.length > 0, 'the dev cluster keeps mod-shard tables beside object shard 0');
    const ledger = new Map<string, { shard: number; data: unknown }>();
    const refused: string[] = [];
    let writing = true;
    let n = 0;
    const writer = async (w: number) => {
      while (writing) {
        const shard = (w + n++) % 4;
        const data = { w, n };
        try {
          const o = await kit.objects.create('pin', data, { shard });
          ledger.set(String(o.id), { shard, data });
        } catch (err) {
          if (!isShardKitError(err)) throw err;
          refused.push(err.code); // not acknowledged: the client would retry
        }
      }
    };
    let writerError: unknown;
    const writers = [0, 1, 2, 3].map((w) => writer(w).catch((err) => { writerError ??= err; }));
    const acked = (shard: number) => [...ledger.values()].filter((v) => v.shard === shard).length;
    // Waits until every one of `shards` has `n` more acknowledged writes (or a writer failed).
    const progress = async (n: number) => {
      const base = [0, 1, 2, 3].map(acked);
      while (writerError === undefined && [0, 1, 2, 3].some((s) => acked(s) < base[s]! + n)) await new Promise((r) => setTimeout(r, 20));
    };
    // Let the writers get going on every shard before the move starts.
    await progress(10);
    const at: Record<string, number> = {};
    const rowsCopied: number[] = [];
    const bytes: Array<{ done: number; bytes: number }> = [];
    const result = await runMove({
      store: store(), engine, hosts: hostNames(), start: { span: { first: 0, last: 1 }, target: TARGET, holdMs: 30_000 },
      onEvent: (e) => {
        at[e.detail?.verified === true ? 'verified' : e.phase] ??= e.elapsedMs;
      },
      onProgress: (_done, _total, rows) => {
        if (rows?.rowsCopied !== undefined) rowsCopied.push(rows.rowsCopied);
        if (rows?.bytesCopied !== undefined) bytes.push({ done: _done, bytes: rows.bytesCopied });
      },
    });
    // And carry on after the switch, on the moved shards too.
    await progress(10);
    writing = false;
    await Promise.all(writers);
    assert.equal(writerError, undefined);

    assert.equal(result.outcome, 'switched');
    assert.deepEqual(result.verify?.mismatches, []);
    assert.ok(result.verify!.rows >= 40, `verified ${result.verify!.rows} rows`);
    // The pre-copy reports the rows the dump brought (10+ acknowledged per shard before the move).
    assert.ok(rowsCopied.length > 0 && rowsCopied.at(-1)! >= 20, `rows copied reported: ${JSON.stringify(rowsCopied)}`);
    // While the dump streams, its bytes (no rows yet, no shard done); the last report carries the total.
    const streaming = bytes.filter((b) => b.done === 0);
    assert.ok(streaming.length > 0 && streaming.every((b, i) => b.bytes > 0 && (i === 0 || b.bytes >= streaming[i - 1]!.bytes)), `bytes reported while the dump ran: ${JSON.stringify(bytes)}`);
    assert.equal(bytes.at(-1)!.done, 2);
    assert.equal(bytes.at(-1)!.bytes, streaming.at(-1)!.bytes, 'the final report carries the dump\'s total bytes');
    const map = await kit.shardMap();
    assert.equal(map.locate(0).master, TARGET.master);
    assert.equal(map.locate(1).master, TARGET.master);
    assert.equal(map.locate(2).master, SOURCE);

    for (let s = 0; s <= 3; s++) {
      const moved = s <= 1;
      const acked = [...ledger].filter(([, v]) => v.shard === s).map(([id]) => String(pinterestId.decode(id).localId));
      const onTarget = moved ? await ids(TARGET.master, db(s), 'pins') : [];
      const onSource = moved ? await ids(SOURCE, `${db(s)}_moved`, 'pins') : await ids(SOURCE, db(s), 'pins');
      if (moved) {
        for (const id of acked) assert.ok(onTarget.includes(id), `acknowledged pin ${id} of shard ${s} is on the target`);
        // The source copy is frozen at the fence: everything it holds is on the target, the target only adds.
        for (const id of onSource) assert.ok(onTarget.includes(id), `source row ${id} of shard ${s} was copied`);
        assert.ok(onTarget.length > onSource.length, `shard ${s} took writes on the target after the switch (${onTarget.length} > ${onSource.length})`);
        assert.deepEqual((await tablesIn(SOURCE, db(s))).filter((x) => objectTables.includes(x)), [], `shard ${s} has no live object table on the source`);
        // Ids made on the target continue past the source's.
        const maxSource = onSource.reduce((m, x) => (BigInt(x) > m ? BigInt(x) : m), 0n);
        const newer = onTarget.filter((x) => !onSource.includes(x));
        for (const x of newer) assert.ok(BigInt(x) > maxSource, `new id ${x} on shard ${s} is past the source's ${maxSource}`);
      } else {
        for (const id of acked) assert.ok(onSource.includes(id), `acknowledged pin ${id} of shard ${s} is on the source`);
        assert.deepEqual(await tablesIn(TARGET.master, db(s)).then((t) => t.filter((x) => x === 'pins')), [], `shard ${s} never appears on the target`);
      }
    }
    assert.deepEqual((await tablesIn(SOURCE, db(0))).filter((t) => !objectTables.includes(t)), lookupTables, 'mod-shard tables did not move');
    // Reads through the kit find every acknowledged write.
    for (const [id, v] of ledger) assert.deepEqual((await kit.objects.get(id)).data, v.data);
    // The target's slave got the copy by replication.
    const slaveHas = async () => (await ids(TARGET.slave, db(0), 'pins')).length;
    const want = (await ids(TARGET.master, db(0), 'pins')).length;
    for (let i = 0; i < 200 && (await slaveHas()) < want; i++) await new Promise((r) => setTimeout(r, 100));
    assert.equal(await slaveHas(), want);
    // No replication connection is left on the target, and its master and slave have equal GTID
    // histories (the replicated events reached the slave through the master's binlog).
    assert.deepEqual(await moveConnections(TARGET.master), []);
    const gtid = async (host: string) => (await adminQuery<{ p: string }>(host, 'SELECT @@GLOBAL.gtid_binlog_pos AS p'))[0]!.p;
    for (let i = 0; i < 200 && (await gtid(TARGET.master)) !== (await gtid(TARGET.slave)); i++) await new Promise((r) => setTimeout(r, 100));
    assert.equal(await gtid(TARGET.slave), await gtid(TARGET.master));
    assert.equal(result.move.detail?.connection !== undefined, true, 'the move pre-copied by replication');
    console.log(`moved 2 shards: ${ledger.size} acknowledged writes, ${refused.length} refused (${[...new Set(refused)].join(',') || '-'}), verified ${result.verify!.rows} rows, writes held ${result.freezeToSwitchMs} ms (fence ${at.fenced! - at.frozen!} ms, catch-up + verify ${at.verified! - at.fenced!} ms, switch ${at.switched! - at.verified!} ms)`);

    // drop-moved removes the fenced copies on the source only.
    const rec = result.move;
    assert.equal(await engine.dropMoved(rec), 2);
    assert.deepEqual(await tablesIn(SOURCE, `${db(0)}_moved`), []);
    assert.ok((await ids(TARGET.master, db(0), 'pins')).length > 0);
  });

  test('a transaction held open on a moving shard across the freeze commits before the fence and reaches the target', async () => {
    const c = await userConnection(hosts, storage, SOURCE);
    let committed = false;
    try {
      await c.query('BEGIN');
      const [res] = await c.query(`INSERT INTO \`${db(2)}\`.\`pins\` (data) VALUES ('{"open":true}')`);
      const localId = String((res as { insertId: number }).insertId);
      let commit: Promise<unknown> | undefined;
      const result = await runMove({
        store: store(), engine, hosts: hostNames(), start: { span: { first: 2, last: 2 }, target: TARGET, holdMs: 30_000 },
        afterPhase: (phase) => {
          // The fence (RENAME) waits for this transaction's metadata lock: commit it while the fence waits or before.
          if (phase === 'frozen') commit = new Promise((r) => setTimeout(r, 300)).then(() => c.query('COMMIT')).then(() => { committed = true; });
        },
      });
      await commit;
      assert.equal(committed, true);
      assert.equal(result.outcome, 'switched');
      assert.ok((await ids(TARGET.master, db(2), 'pins')).includes(localId), 'the committed row was copied');
    } finally {
      await c.end();
    }
  });

  test('a failure before the switch returns the range to the source: tables back, rows intact, no copy left on the target', async () => {
    const before = await ids(SOURCE, db(3), 'pins');
    assert.ok(before.length > 0);
    await assert.rejects(
      runMove({
        store: store(), engine, hosts: hostNames(), start: { span: { first: 3, last: 3 }, target: TARGET, holdMs: 30_000 },
        afterPhase: (phase) => {
          if (phase === 'fenced') throw new Error('injected failure after the fence');
        },
      }),
      /injected failure/,
    );
    const map = await kit.shardMap();
    assert.equal(map.locate(3).master, SOURCE);
    assert.equal(map.moves().filter((m) => m.range[0] === 3).length, 0);
    assert.deepEqual(await ids(SOURCE, db(3), 'pins'), before);
    assert.deepEqual(await tablesIn(SOURCE, `${db(3)}_moved`), []);
    assert.deepEqual((await tablesIn(TARGET.master, db(3))).filter((t) => t === 'pins'), []);
    // The service writes there again.
    const o = await kit.objects.create('pin', { back: true }, { shard: 3 });
    assert.ok((await ids(SOURCE, db(3), 'pins')).includes(String(pinterestId.decode(o.id).localId)));
  });

  test('vitess#9525: under lag the freeze never starts; the gate gives up, and the range is back on the source with the connection removed', async () => {
    const before = await ids(SOURCE, db(3), 'pins');
    const events: MoveEvent[] = [];
    let locker: mysql.Connection | undefined;
    try {
      await assert.rejects(
        runMove({
          store: store(), engine, hosts: hostNames(), start: { span: { first: 3, last: 3 }, target: TARGET, holdMs: 30_000 },
          maxLag: 0, lagWaitMs: 3000, onEvent: (e) => events.push(e),
          afterPhase: async (phase) => {
            if (phase === 'copied') {
              // The target's replication stalls on a table lock while the source keeps writing.
              locker = await admin.connect(TARGET.master);
              await locker.query(`LOCK TABLES \`${db(3)}\`.\`pins\` WRITE`);
              for (let i = 0; i < 5; i++) await kit.objects.create('pin', { lag: i }, { shard: 3 });
            }
            if (phase === 'aborting') await locker?.query('UNLOCK TABLES');
          },
        }),
        (err) => isShardKitError(err, 'SHARD_UNAVAILABLE') && /behind the source/.test(err.message),
      );
    } finally {
      await locker?.query('UNLOCK TABLES').catch(() => undefined);
      await locker?.end();
    }
    assert.ok(events.some((e) => e.phase === 'copied' && typeof e.detail?.lag === 'number' && (e.detail.lag as number) > 0), 'the lag was reported while waiting');
    assert.equal(events.filter((e) => e.phase === 'frozen').length, 0, 'never frozen');
    const map = await kit.shardMap();
    assert.equal(map.locate(3).master, SOURCE);
    assert.equal(map.moves().filter((m) => m.range[0] === 3).length, 0);
    assert.deepEqual(await moveConnections(TARGET.master), []);
    const after = await ids(SOURCE, db(3), 'pins');
    for (const id of before) assert.ok(after.includes(id));
    assert.equal(after.length, before.length + 5);
    assert.deepEqual((await tablesIn(TARGET.master, db(3))).filter((t) => t === 'pins'), []);
  });

  test('vitess#6951: the cutover refuses a copy that does not verify (a row lost on the target), and the range goes back to the source', async () => {
    const before = await ids(SOURCE, db(3), 'pins');
    assert.ok(before.length > 0);
    // The copy loses a row after catch-up, behind replication's back.
    class LossyEngine extends MariadbReplicatedMoveEngine {
      override async catchUp(move: Parameters<MariadbMoveEngine['catchUp']>[0]): Promise<void> {
        await super.catchUp(move);
        const c = await admin.connect(TARGET.master);
        try {
          await c.query('SET SESSION sql_log_bin = 0');
          await c.query(`DELETE FROM \`${db(3)}\`.\`pins\` ORDER BY local_id LIMIT 1`);
        } finally {
          await c.end();
        }
      }
    }
    const lossy = new LossyEngine({ hosts, ...storage, tables: objectTables, admin: moveAdmin(admin) });
    const events: MoveEvent[] = [];
    await assert.rejects(
      runMove({ store: store(), engine: lossy, hosts: hostNames(), start: { span: { first: 3, last: 3 }, target: TARGET, holdMs: 30_000 }, onEvent: (e) => events.push(e) }),
      (err) => isShardKitError(err) && /verify found 1 mismatching chunk/.test(err.message) && /shard 3 pins/.test(err.message),
    );
    assert.equal(events.filter((e) => e.phase === 'switched').length, 0);
    const map = await kit.shardMap();
    assert.equal(map.locate(3).master, SOURCE);
    assert.deepEqual(await ids(SOURCE, db(3), 'pins'), before);
    assert.deepEqual((await tablesIn(TARGET.master, db(3))).filter((t) => t === 'pins'), []);
    assert.deepEqual(await moveConnections(TARGET.master), []);
  });

  test('a target that already holds rows of a moving shard is refused (ALREADY_EXISTS) by either engine, and the abort leaves those rows alone on both hosts of the target pair, whose replication runs on', async () => {
    // Without admin access the factory gives the engine that copies under the freeze; both refuse in prepare.
    const copying = createMariadbMoveEngine({ hosts, ...storage, tables: objectTables });
    const pins = `\`${db(3)}\`.\`pins\``;
    const rows = async (host: string) => ((await adminTablesIn(host, db(3))).includes('pins') ? (await adminQuery<{ data: string }>(host, `SELECT data FROM ${pins} ORDER BY local_id`)).map((r) => r.data) : 'no table');
    const slaveCaughtUp = async () => gtidWait(admin, TARGET.slave, (await adminQuery<{ p: string }>(TARGET.master, 'SELECT @@GLOBAL.gtid_binlog_pos AS p'))[0]!.p, 60_000);
    const slaveError = async () => (await adminQuery<{ Last_SQL_Error: string }>(TARGET.slave, 'SHOW ALL SLAVES STATUS')).map((r) => r.Last_SQL_Error).join('; ');
    const c = await admin.connect(TARGET.master);
    try {
      for (const [kind, mover] of [['replicated', engine], ['copy under the freeze', copying]] as const) {
        await c.query(`CREATE DATABASE IF NOT EXISTS \`${db(3)}\``);
        await c.query(`CREATE TABLE ${pins} (local_id BIGINT PRIMARY KEY, data TEXT)`);
        await c.query(`INSERT INTO ${pins} VALUES (1, 'not ours')`);
        // The slave holds them before the move: what it holds afterwards is what the refusal left.
        assert.ok(await slaveCaughtUp(), `${kind}: the target's slave got the table before the move`);
        await assert.rejects(
          runMove({ store: store(), engine: mover, hosts: hostNames(), start: { span: { first: 3, last: 3 }, target: TARGET, holdMs: 30_000 } }),
          (err) => isShardKitError(err, 'ALREADY_EXISTS') && /db00003\.pins on the target MySQL002A already holds rows/.test(err.message),
        );
        assert.deepEqual(await rows(TARGET.master), ['not ours'], `${kind}: the target's master keeps its rows`);
        assert.deepEqual(await rows(TARGET.slave), ['not ours'], `${kind}: the target's slave keeps its table and rows`);
        // The target pair still replicates: a write on its master is applied on its slave.
        await c.query(`INSERT INTO ${pins} VALUES (2, 'after the refusal')`);
        assert.ok(await slaveCaughtUp(), `${kind}: the target's slave applies its master's writes (${await slaveError()})`);
        assert.deepEqual(await rows(TARGET.slave), ['not ours', 'after the refusal']);
        assert.equal((await kit.shardMap()).locate(3).master, SOURCE);
        assert.deepEqual(await moveConnections(TARGET.master), []);
        await c.query(`DROP TABLE ${pins}`);
      }
    } finally {
      await c.query(`DROP TABLE IF EXISTS ${pins}`);
      await c.end();
      await copying.close();
    }
  });

  test('bad input: a target that is the source, an unknown host; nothing changes', async () => {
    const version = (await store().read())!.version;
    const moves = (await store().read())!.moves().length;
    await assert.rejects(runMove({ store: store(), engine, hosts: hostNames(), start: { span: { first: 3, last: 3 }, target: { master: SOURCE } } }), (err) => isShardKitError(err, 'INVALID_ARGUMENT'));
    await assert.rejects(runMove({ store: store(), engine, hosts: hostNames(), start: { span: { first: 3, last: 3 }, target: { master: 'MySQL009A' } } }), (err) => isShardKitError(err, 'INVALID_ARGUMENT') && /unknown host/.test(err.message));
    assert.equal((await store().read())!.version, version);
    assert.equal((await store().read())!.moves().length, moves);
  });

  test('a target master with a slave replicating from it, and no target slave named: refused before anything is created; the target pair replicates on', async () => {
    const before = (await store().read())!;
    await assert.rejects(runMove({ store: store(), engine, hosts: hostNames(), start: { span: { first: 3, last: 3 }, target: { master: TARGET.master } } }),
      (err) => isShardKitError(err, 'INVALID_ARGUMENT') && /has a slave replicating from it: name it with --to-slave/.test(err.message));
    const after = (await store().read())!;
    assert.equal(after.moves().length, before.moves().length);
    assert.equal(after.locate(3).master, SOURCE);
    assert.deepEqual(await adminTablesIn(TARGET.master, db(3)), []);
    assert.deepEqual(await moveConnections(TARGET.master), []);
    // Its slave still applies what its master writes.
    await adminQuery(TARGET.master, 'CREATE DATABASE IF NOT EXISTS unnamed_slave_check');
    assert.ok(await gtidWait(admin, TARGET.slave, (await adminQuery<{ p: string }>(TARGET.master, 'SELECT @@GLOBAL.gtid_binlog_pos AS p'))[0]!.p, 60_000));
    assert.deepEqual((await adminQuery<{ n: string }>(TARGET.slave, "SELECT SCHEMA_NAME AS n FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 'unnamed_slave_check'")).map((r) => r.n), ['unnamed_slave_check']);
    await adminQuery(TARGET.master, 'DROP DATABASE unnamed_slave_check');
  });

  test('the CLI moves shards 4..5 on the dev cluster config: move, verify (exit 0), drop-moved; bad input is one line, exit 2', async () => {
    const args = ['--config', configPath, '--data', clusterDir];
    await kit.objects.create('pin', { cli: true }, { shard: 4 });
    const bad = await cli(['shards', 'move', '4..5', '--to', 'MySQL009A', ...args]);
    assertBadInput(bad, 'unknown target host', /INVALID_ARGUMENT.*unknown host MySQL009A/);
    const same = await cli(['shards', 'move', '4..5', '--to', 'MySQL002A', ...args]);
    assertBadInput(same, 'target is the source', /INVALID_ARGUMENT/);

    const moved = await cli(['shards', 'move', '4..5', '--to', 'MySQL001A', '--to-slave', 'MySQL001B', '--hold-ms', '30000', '--json', ...args]);
    assert.equal(moved.code, 0, moved.stderr);
    const lines = moved.stdout.trim().split('\n').map((l) => JSON.parse(l) as { event: string; outcome?: string; verifiedRows?: number; steps?: Record<string, number> });
    assert.equal(lines.at(-1)!.outcome, 'switched');
    assert.ok(lines.at(-1)!.verifiedRows! >= 1);
    // The result line names each engine step's time, so an operator sees what the freeze spent on this host.
    const steps = lines.at(-1)!.steps ?? {};
    assert.ok(Object.keys(steps).some((k) => k.startsWith('fence: ')) && Object.values(steps).every((ms) => Number.isInteger(ms) && ms >= 0), `steps ${JSON.stringify(steps)}`);
    assert.ok((await ids('MySQL001A', db(4), 'pins')).length >= 1);

    const verified = await cli(['shards', 'verify', '4..5', '--json', ...args]);
    assert.equal(verified.code, 0, verified.stderr);
    assert.deepEqual((JSON.parse(verified.stdout) as { mismatches: unknown[] }).mismatches, []);

    // An operator runs `dev up` again after the move (docs/moves.md): it must not give the old
    // source its moved shards' object tables back. Those empty tables would let a service with a
    // stale map write there (the missing-table fence gone) and make drop-moved refuse.
    const again = await cli(['dev', 'up', '--dir', clusterDir, '--json']);
    assert.equal(again.code, 0, again.stderr);
    // The database also holds mod shard 4's lookup tables, which stay there.
    const objectTablesOf = async (shard: number) => (await tablesIn('MySQL002A', db(shard))).filter((t) => objectTables.includes(t));
    assert.deepEqual(await objectTablesOf(4), [], 'dev up re-created shard 4 on its old source');
    assert.deepEqual(await objectTablesOf(5), [], 'dev up re-created shard 5 on its old source');
    await assert.rejects(writeWithin('MySQL002A', `INSERT INTO \`${db(4)}\`.\`pins\` (data) VALUES ('{"stale":true}')`), /doesn't exist|Unknown database/);

    const dropped = await cli(['shards', 'drop-moved', '--json', ...args]);
    assert.equal(dropped.code, 0, dropped.stderr);
    assert.equal((JSON.parse(dropped.stdout) as { dropped: Array<{ files: number }> }).dropped[0]!.files, 2);
    assert.deepEqual(await tablesIn('MySQL002A', `${db(4)}_moved`), []);
    assert.ok((await ids('MySQL001A', db(4), 'pins')).length >= 1);
  });

  test('kill -9 of the CLI mover after the fence: --abort puts shards 6..7 back on the source, then a second kill and --resume switches them', async () => {
    const args = ['--config', configPath, '--data', clusterDir];
    for (const s of [6, 7]) for (let i = 0; i < 5; i++) await kit.objects.create('pin', { s, i }, { shard: s });
    const before6 = await ids('MySQL002A', db(6), 'pins');
    const killAfterFence = async () => {
      await killMoverAfter('fenced', ['6..7', '--to', 'MySQL001A', '--to-slave', 'MySQL001B', '--hold-ms', '30000', '--json', ...args]);
      // The mover held the lock fence (LOCK TABLES, nothing renamed yet): the locks died with its
      // connections, so the source's tables are live and take writes again (the freeze expires).
      assert.deepEqual((await tablesIn('MySQL002A', db(6))).filter((t) => t === 'pins'), ['pins']);
      assert.deepEqual(await tablesIn('MySQL002A', `${db(6)}_moved`), []);
      await writeWithin('MySQL002A', `INSERT INTO \`${db(6)}\`.\`boards\` (data) VALUES ('{"afterKill":true}')`);
    };

    await killAfterFence();
    const aborted = await cli(['shards', 'move', '6..7', '--abort', '--json', ...args]);
    assert.equal(aborted.code, 0, aborted.stderr);
    assert.equal((JSON.parse(aborted.stdout.trim().split('\n').at(-1)!) as { outcome: string }).outcome, 'aborted');
    assert.deepEqual(await ids('MySQL002A', db(6), 'pins'), before6);
    assert.deepEqual(await tablesIn('MySQL002A', `${db(6)}_moved`), []);
    assert.deepEqual((await tablesIn('MySQL001A', db(6))).filter((t) => t === 'pins'), []);

    await killAfterFence();
    const resumed = await cli(['shards', 'move', '6..7', '--resume', '--json', ...args]);
    assert.equal(resumed.code, 0, resumed.stderr);
    assert.equal((JSON.parse(resumed.stdout.trim().split('\n').at(-1)!) as { outcome: string }).outcome, 'switched');
    assert.deepEqual(await ids('MySQL001A', db(6), 'pins'), before6);
  });

  test('shards verify compares a master with its slave chunk by chunk: clean, then a row changed by hand on the slave (sql_log_bin=0) is named, exit 3', async () => {
    const args = ['--config', configPath, '--data', clusterDir];
    const made: bigint[] = [];
    for (let i = 0; i < 30; i++) made.push((await kit.objects.create('pin', { verify: i }, { shard: 3 })).id);
    const clean = await cli(['shards', 'verify', '3..3', '--json', ...args]);
    assert.equal(clean.code, 0, clean.stderr);
    const report = JSON.parse(clean.stdout) as { mismatches: unknown[]; shards: number; rows: number; skipped: number[] };
    assert.deepEqual(report.mismatches, []);
    assert.equal(report.shards, 1, 'shard 3 (on MySQL001A in both maps: its move failed before the switch) has a slave: it is compared, not skipped');
    assert.ok(report.rows >= 30, `compared ${report.rows} rows: ${clean.stdout}`);

    const victim = BigInt(pinterestId.decode(made[17]!).localId);
    const slave = cluster.instance('MySQL001B');
    // As the server's admin: the application user cannot write on a read-only slave or skip the binlog.
    const [orig] = await slave.admin<Array<{ data: string }>>({ sql: `SELECT data FROM ${db(3)}.pins WHERE local_id = ?`, values: [String(victim)] });
    const drift = async (data: string) => {
      await slave.admin('SET sql_log_bin = 0', { sql: `UPDATE ${db(3)}.pins SET data = ? WHERE local_id = ?`, values: [data, String(victim)] });
    };
    await drift('{"changed":"by hand"}');
    try {
      const dirty = await cli(['shards', 'verify', '3..3', ...args]);
      assert.equal(dirty.code, 3, `exit code ${dirty.code}: ${dirty.stdout}${dirty.stderr}`);
      assert.match(dirty.stdout, /MISMATCH shard 3 pins keys/);
      const json = await cli(['shards', 'verify', '3..3', '--json', ...args]);
      assert.equal(json.code, 3);
      const m = (JSON.parse(json.stdout) as { mismatches: Array<{ shard: number; table: string; fromKey: string; toKey: string }> }).mismatches;
      assert.equal(m.length, 1);
      assert.equal(m[0]!.table, 'pins');
      const lo = m[0]!.fromKey === '-inf' ? -1n : BigInt(m[0]!.fromKey);
      assert.ok(lo <= victim && victim <= BigInt(m[0]!.toKey), `the named chunk ${m[0]!.fromKey}..${m[0]!.toKey} holds local id ${victim}`);
    } finally {
      await drift(orig!.data);
    }
    const again = await cli(['shards', 'verify', '3..3', '--json', ...args]);
    assert.equal(again.code, 0, again.stdout);
  });
  test('a move back to the original pair: the fence is binlogged in its own domain (the source\'s slave follows it, the target never replays it), pair histories stay equal, and ids never repeat (AUTO_INCREMENT raised before the freeze, altered under it only past the margin)', async () => {
    // Shards 0..1 went to pair 2 in the first test; they come back to pair 1 (drop-moved removed their old copies there).
    const from = TARGET;
    const to = { master: SOURCE, slave: 'MySQL001B' };
    assert.ok(objectTables.includes('boards'), `the dev schema has boards: ${objectTables.join(',')}`);
    for (let s = 0; s <= 1; s++) for (let i = 0; i < 5; i++) await kit.objects.create('board', { back: s, i }, { shard: s });
    const serverId = async (host: string) => Number((await adminQuery<{ n: number | string }>(host, 'SELECT @@GLOBAL.server_id AS n'))[0]!.n);
    const gtid = async (host: string) => (await adminQuery<{ p: string }>(host, 'SELECT @@GLOBAL.gtid_binlog_pos AS p'))[0]!.p;
    const fenceEntry = (pos: string) => pos.split(',').find((x) => x.startsWith(`${FENCE_DOMAIN_ID}-`));
    const counter = async (host: string, database: string, table: string) =>
      BigInt((await adminQuery<{ n: string | number }>(host, 'SELECT AUTO_INCREMENT AS n FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?', [database, table]))[0]!.n);
    // Ids the source hands out without a row reaching the target (a rolled-back insert): only the counter knows them.
    const burn = async (table: string, n: number) => {
      const c = await admin.connect(from.master);
      try {
        await c.query('BEGIN');
        for (let i = 0; i < n; i++) await c.query(`INSERT INTO \`${db(1)}\`.\`${table}\` (data) VALUES ('{"burnt":true}')`);
        await c.query('ROLLBACK');
      } finally {
        await c.end();
      }
    };
    let altered: number | undefined;
    const margined = createMariadbMoveEngine({ hosts, ...storage, tables: objectTables, admin: moveAdmin(admin), autoIncrementMargin: 5, onStep: (step, n) => { if (step === 'auto-increment: tables altered (count)') altered = n; } });
    const sourceFenceBefore = fenceEntry(await gtid(from.master));
    const result = await runMove({
      store: store(), engine: margined, hosts: hostNames(), start: { span: { first: 0, last: 1 }, target: to, holdMs: 30_000 },
      afterPhase: async (phase) => {
        // Before the margin is set: covered by it. Under the freeze (services hold writes; the fence has not run): past it.
        if (phase === 'copied') {
          await burn('boards', 3);
          await burn('pins', 3);
        }
        if (phase === 'frozen') await burn('pins', 10);
      },
    });
    assert.equal(result.outcome, 'switched');
    assert.deepEqual(result.verify?.mismatches, []);
    assert.equal((await kit.shardMap()).locate(0).master, to.master);
    // The fence ran in its own domain on the source, which its slave applied too...
    const fenced = fenceEntry(await gtid(from.master));
    assert.ok(fenced !== undefined && fenced !== sourceFenceBefore, `the source binlogged the fence in domain ${FENCE_DOMAIN_ID}: ${await gtid(from.master)}`);
    for (let i = 0; i < 200 && (await gtid(from.slave)) !== (await gtid(from.master)); i++) await new Promise((r) => setTimeout(r, 100));
    assert.equal(await gtid(from.slave), await gtid(from.master), 'the source pair\'s slave followed the fence');
    assert.deepEqual(await tablesIn(from.slave, `${db(0)}_moved`), await tablesIn(from.master, `${db(0)}_moved`));
    assert.ok((await tablesIn(from.slave, `${db(0)}_moved`)).includes('pins'));
    // ...and the target never replayed it: no dbNNNNN_moved there, no fence GTID of the source's server.
    for (const host of [to.master, to.slave]) {
      for (const s of [0, 1]) assert.deepEqual(await tablesIn(host, `${db(s)}_moved`), [], `${host} holds no ${db(s)}_moved`);
      const entry = fenceEntry(await gtid(host));
      assert.ok(entry === undefined || !entry.startsWith(`${FENCE_DOMAIN_ID}-${await serverId(from.master)}-`), `${host} has no fence GTID of the source: ${entry}`);
    }
    assert.deepEqual(await moveConnections(to.master), []);
    for (let i = 0; i < 200 && (await gtid(to.slave)) !== (await gtid(to.master)); i++) await new Promise((r) => setTimeout(r, 100));
    assert.equal(await gtid(to.slave), await gtid(to.master), 'the target pair\'s GTID histories are equal');
    // Every row came back.
    for (const s of [0, 1]) assert.deepEqual(await ids(to.master, db(s), 'pins'), await ids(from.master, `${db(s)}_moved`, 'pins'));
    // New ids on the target continue past every id the source handed out, the burnt ones included.
    for (const [type, table] of [['pin', 'pins'], ['board', 'boards']] as const) {
      const sourceNext = await counter(from.master, `${db(1)}_moved`, table);
      const made = await kit.objects.create(type, { after: 'move back' }, { shard: 1 });
      const local = BigInt(pinterestId.decode(made.id).localId);
      assert.ok(local >= sourceNext, `new ${type} id ${local} on the target is below the source's counter ${sourceNext}: an id the source handed out is reused`);
      assert.ok((await ids(to.master, db(1), table)).includes(String(local)));
    }
    // Only pins of shard 1 passed the margin before the fence: one ALTER under the freeze (boards' burnt ids were covered before it).
    assert.equal(altered, 1, 'tables altered under the freeze');
    // drop-moved removes the source's fenced copies (binlogged in the source's domain: the move connection is gone).
    assert.equal(await margined.dropMoved(result.move), 2);
  });
  test('kill -9 of the CLI mover right after the switch, its lock fence armed: the server still renames the source\'s tables aside, a stale write blocked on them gets the fence error (never lands), --resume finishes', async () => {
    // Shards 4..5 are on MySQL001A since the CLI test; they go back to pair 2.
    const args = ['--config', configPath, '--data', clusterDir];
    // Written by hand: the CLI's store (not this file's kit) knows where 4..5 are.
    for (const s of [4, 5]) for (let i = 0; i < 3; i++) await writeWithin('MySQL001A', `INSERT INTO \`${db(s)}\`.\`pins\` (data) VALUES ('{"killSwitched":${i}}')`);
    const before4 = await ids('MySQL001A', db(4), 'pins');
    let stale: Promise<string> | undefined;
    await killMoverAfter('switched', ['4..5', '--to', 'MySQL002A', '--to-slave', 'MySQL002B', '--hold-ms', '30000', '--json', ...args], async () => {
      // A service with a stale map deletes on the source: the lock fence (still held) blocks it.
      const c = await userConnection(hosts, storage, 'MySQL001A');
      await c.query('SET SESSION lock_wait_timeout = 60');
      stale = c.query(`DELETE FROM \`${db(4)}\`.\`pins\` ORDER BY local_id LIMIT 1`).then(() => 'deleted', (err: { code?: string }) => String(err.code)).finally(() => c.end().catch(() => undefined));
      for (let waited = 0; ; waited += 20) {
        const waiting = await adminQuery<{ n: number | string }>('MySQL001A', "SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE STATE = 'Waiting for table metadata lock' AND INFO LIKE 'DELETE FROM%'");
        if (Number(waiting[0]!.n) > 0) break;
        if (waited > 30_000) throw new Error('the stale write never waited for the fence');
        await new Promise((r) => setTimeout(r, 20));
      }
    });
    // The mover is dead; its armed rename blocks were already on the server: they rename and unlock.
    assert.equal(await stale, 'ER_NO_SUCH_TABLE', 'the stale write met the fence instead of landing on the source');
    // pins is renamed (the stale write saw it missing); the other tables follow in the same block.
    const liveLeft = async () => (await tablesIn('MySQL001A', db(4))).filter((t) => objectTables.includes(t));
    for (let waited = 0; (await liveLeft()).length > 0 && waited < 60_000; waited += 50) await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(await liveLeft(), []);
    assert.ok((await tablesIn('MySQL001A', `${db(4)}_moved`)).includes('pins'));
    assert.deepEqual(await ids('MySQL001A', `${db(4)}_moved`, 'pins'), before4, 'nothing deleted on the source');
    assert.deepEqual(await ids('MySQL002A', db(4), 'pins'), before4, 'every row on the target');
    const resumed = await cli(['shards', 'move', '4..5', '--resume', '--json', ...args]);
    assert.equal(resumed.code, 0, resumed.stderr);
    assert.equal((JSON.parse(resumed.stdout.trim().split('\n').at(-1)!) as { outcome: string }).outcome, 'switched');
    assert.deepEqual(await moveConnections('MySQL002A'), [], 'the move connection removed by the resumed mover');
  });

  test('a resumed prepare loads the copy into the target\'s slave only after that slave applied its master\'s binlog (the DROP of the old copy): the slave keeps the copy', async () => {
    const m0 = (await store().read())!;
    const span = [[0, 1], [2, 3], [4, 5], [6, 7]].find(([a, b]) => m0.rangeOf(a!)!.range[1] >= b! && m0.rangeOf(a!)!.frozen === undefined)!;
    const from = m0.locate(span[0]!).master;
    const to = from === 'MySQL001A' ? { master: 'MySQL002A', slave: 'MySQL002B' } : { master: 'MySQL001A', slave: 'MySQL001B' };
    const move = ShardMap.fromJSON(addMove(m0, { span: { first: span[0]!, last: span[1]! }, target: to, hosts: hostNames() })).moves().find((x) => x.range[0] === span[0] && x.phase === 'started')!;
    const mover = createMariadbMoveEngine({ hosts, ...storage, tables: objectTables, admin: moveAdmin(admin) });
    const copied = async (host: string) => (await Promise.all(span.map(async (s) => (await tablesIn(host, db(s!))).filter((t) => objectTables.includes(t)).map((t) => `${db(s!)}.${t}`)))).flat();
    try {
      await mover.prepare(move);
      assert.ok((await copied(to.slave)).length > 0, 'the first copy reached the slave');
      // The slave stops applying: the resumed prepare's DROP of the first copy, binlogged on the
      // master, waits in its relay log (or on the master) until the slave runs again.
      await adminQuery(to.slave, 'STOP ALL SLAVES');
      let settled = false;
      const second = mover.prepare(move);
      second.then(() => (settled = true), () => (settled = true));
      // Let the slave run again once the prepare waits for it (or, on code that does not wait, once it is done).
      for (let i = 0; i < 6000 && !settled; i++) {
        const [w] = await adminQuery<{ n: string | number }>(to.slave, "SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE INFO LIKE 'SELECT MASTER_GTID_WAIT%'");
        if (Number(w!.n) > 0) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      await adminQuery(to.slave, 'START ALL SLAVES');
      await second;
      const [pos] = await adminQuery<{ p: string }>(to.master, 'SELECT @@GLOBAL.gtid_binlog_pos AS p');
      const [w] = await adminQuery<{ w: string | number }>(to.slave, 'SELECT MASTER_GTID_WAIT(?, 60) AS w', [pos!.p]);
      assert.equal(Number(w!.w), 0, 'the slave caught up');
      const onMaster = await copied(to.master);
      assert.ok(onMaster.length > 0);
      assert.deepEqual(await copied(to.slave), onMaster, 'the slave holds the copy its master holds');
      for (const s of span) assert.deepEqual(await ids(to.slave, db(s!), 'pins'), await ids(to.master, db(s!), 'pins'));
    } finally {
      await adminQuery(to.slave, 'START ALL SLAVES').catch(() => undefined);
      await mover.undo(move);
      await mover.close();
    }
  });
  test('without admin access the factory gives the engine that copies under the freeze: a move switches with every row on the target, and drop-moved clears the source', async () => {
    const m0 = (await store().read())!;
    const span = [[0, 1], [2, 3], [4, 5], [6, 7]].find(([a, b]) => m0.rangeOf(a!)!.range[1] >= b! && m0.rangeOf(a!)!.frozen === undefined && m0.moves().every((m) => m.range[1] < a! || m.range[0] > b!))!;
    const from = m0.locate(span[0]!).master;
    const to = from === 'MySQL001A' ? { master: 'MySQL002A', slave: 'MySQL002B' } : { master: 'MySQL001A', slave: 'MySQL001B' };
    for (const s of span) for (let i = 0; i < 3; i++) await kit.objects.create('pin', { copy: s, i }, { shard: s! });
    const before = await Promise.all(span.map((s) => ids(from, db(s!), 'pins')));
    const copier = createMariadbMoveEngine({ hosts, ...storage, tables: objectTables });
    try {
      assert.equal(copier.maxLag, 0, 'nothing replicates before the freeze');
      const result = await runMove({ store: store(), engine: copier, hosts: hostNames(), start: { span: { first: span[0]!, last: span[1]! }, target: to, holdMs: 30_000 } });
      assert.equal(result.outcome, 'switched');
      for (const [i, s] of span.entries()) {
        assert.ok(before[i]!.length >= 3);
        assert.deepEqual(await ids(to.master, db(s!), 'pins'), before[i], `shard ${s}: every row is on the target`);
        assert.deepEqual((await tablesIn(from, db(s!))).filter((t) => objectTables.includes(t)), [], `shard ${s}: no live object table left on the source`);
      }
      assert.ok((await copier.dropMoved(result.move)) > 0, 'drop-moved dropped the fenced databases');
    } finally {
      await copier.close();
    }
  });
});
