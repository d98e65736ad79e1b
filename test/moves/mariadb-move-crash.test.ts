/**
 * kill -9 of a master during a MariaDB shard move, on a real dev cluster (2 pairs, object shards
 * 0..3 on MySQL001A, 4..7 on MySQL002A), with two services writing and keeping a ledger of the
 * writes they acknowledged:
 * - the source master killed during the copy (inside the dump, and at the lag gate): the move
 *   aborts by itself; the abort cannot reach the dead source, so the record stays 'aborting' and
 *   the error says to run --abort again. With the source restarted the shards serve, --abort
 *   completes (no connection, no copy left on the target) and a new move of the range succeeds;
 * - the target master killed after the fence (the catch-up): the move never switches; the abort
 *   puts the source back in service although the target is down, nothing was written on the
 *   fenced source, the freeze expires by its hold budget and the services write to the source
 *   again; with the target restarted --abort completes and a new move succeeds with a clean verify.
 * - the target master restarted while the move's connection exists (after the catch-up kill above,
 *   and with the mover gone at the lag gate): the connection does not start with the server
 *   (skip-slave-start on dev servers), so the restarted target applies none of the source's writes
 *   outside the move, although it holds tables of the source's other shards under the same names
 *   (planted empty copies); --abort, or --resume, completes; a connection found running without
 *   its filter is stopped and the move refused.
 * Every test ends with 0 acknowledged writes lost (each on the host the final map names).
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { isShardKitError } from '../../src/errors.js';
import { ShardKit } from '../../src/kit/shard-kit.js';
import { MysqlBackend } from '../../src/storage/mysql/index.js';
import { resolveSchema } from '../../src/config/config.js';
import { fleetTables } from '../../src/storage/shard-names.js';
import { MemoryTopologyBacking, MemoryTopologyStore } from '../../src/topology/memory/memory-topology-store.js';
import { ShardMap, type HostPair, type ShardMapJson } from '../../src/topology/shard-map.js';
import { runMove } from '../../src/moves/move-runner.js';
import type { MoveEngine } from '../../src/moves/move-engine.js';
import { createMariadbMoveEngine } from '../../src/moves/mariadb/index.js';
import type { MoveAdmin } from '../../src/moves/mariadb/move-admin.js';
import { connectionStatus, startFiltered } from '../../src/moves/mariadb/move-replication.js';
import { startTestCluster } from '../mysql/cluster-fixture.js';
import { adminProbe } from './mariadb-probe.js';
import { devHostAdmin, type HostAdmin } from '../../src/ops/failover/host-admin.js';
import { moveAdmin } from '../../src/moves/mariadb/move-admin.js';
import { devUp, type DevCluster } from '../../src/ops/dev-cluster.js';
import type { Ledger } from '../failover/ledger.js';
import { ackedOn, leftAborting, startLoad } from './crash-ledger.js';
import { abortFails, cleanlyAborted, direction, forgetSwitched, noneLost, runMoveSuite, sourceDiesBeforeFreeze, suiteMove, type MoveSuiteFixture } from '../conformance/move-suite.js';
import { emergencyFailover } from '../../src/ops/failover/emergency-failover.js';

const db = (shard: number) => `db${String(shard).padStart(5, '0')}`;
const PAIR1 = { master: 'MySQL001A', slave: 'MySQL001B' };
const PAIR2 = { master: 'MySQL002A', slave: 'MySQL002B' };

describe('moves on MariaDB: kill -9 of the source or the target master during a move', () => {
  let stop: () => Promise<void>;
  let cluster: DevCluster;
  let dir: string;
  /** A killed master comes back as `dev up` brings it (read-only at start, writable as the map's master). */
  const restart = async () => {
    await devUp({ dir, skipInit: true });
  };
  let admin: HostAdmin;
  let objectTables: string[];
  let schema: ReturnType<typeof resolveSchema>;
  let hosts: Record<string, { host: string; port: number }>;
  let storage: { user: string; password?: string };
  let backing: MemoryTopologyBacking;
  const kits: ShardKit[] = [];
  const stores: MemoryTopologyStore[] = [];
  const store = () => {
    const s = new MemoryTopologyStore({ backing });
    stores.push(s);
    return s;
  };
  const engine = (override?: Partial<MoveAdmin>) => createMariadbMoveEngine({ hosts, ...storage, tables: objectTables, admin: { ...moveAdmin(admin), ...override } });

  const { query: adminQuery, tablesIn, ids: idsOf, moveConnections } = adminProbe(() => admin);
  const ids = async (host: string, database: string): Promise<string[]> => ((await tablesIn(host, database)).includes('pins') ? idsOf(host, database, 'pins') : []);
  const map = async () => (await store().read())!;

  /**
   * Empty copies of the object tables of `shards` (as `source` has them) on `target`, binlogged
   * there (its slave follows): shards that are not moving, which the target holds under the same
   * names, so a move connection applying the source's domain without its filter would fill them
   * silently instead of stopping at a missing table. Returns what to drop afterwards.
   */
  const plantDecoys = async (source: string, target: string, shards: number[]): Promise<string[]> => {
    const planted: string[] = [];
    const c = await admin.connect(target);
    try {
      for (const s of shards) {
        const have = await tablesIn(target, db(s));
        await c.query(`CREATE DATABASE IF NOT EXISTS \`${db(s)}\``);
        await c.query(`USE \`${db(s)}\``);
        for (const t of (await tablesIn(source, db(s))).filter((x) => objectTables.includes(x) && !have.includes(x))) {
          const [ddl] = await adminQuery<Record<string, string>>(source, `SHOW CREATE TABLE \`${db(s)}\`.\`${t}\``);
          await c.query(ddl!['Create Table']!);
          planted.push(`\`${db(s)}\`.\`${t}\``);
        }
      }
    } finally {
      await c.end();
    }
    assert.ok(planted.length > 0, `decoy tables planted on ${target}`);
    return planted;
  };
  const decoyRows = async (target: string, planted: string[]): Promise<number> =>
    (await adminQuery<{ n: string | number }>(target, planted.map((t) => `SELECT COUNT(*) AS n FROM ${t}`).join(' UNION ALL '))).reduce((n, r) => n + Number(r.n), 0);
  const dropDecoys = async (target: string, planted: string[]) => {
    if (planted.length > 0) await adminQuery(target, `DROP TABLE IF EXISTS ${planted.join(', ')}`);
  };
  /**
   * Once the restarted target's move connection is settled: stopped, or caught up with the
   * source's domain as of now (what an unfiltered connection would have applied by then). The
   * bound is a hang guard only.
   */
  const settled = async (source: string, target: string) => {
    const [src] = await adminQuery<{ d: string; pos: string }>(source, 'SELECT @@GLOBAL.gtid_domain_id AS d, @@GLOBAL.gtid_binlog_pos AS pos');
    const head = src!.pos.split(',').find((x) => x.startsWith(`${src!.d}-`));
    const deadline = Date.now() + 120_000;
    for (;;) {
      const rows = (await adminQuery<Record<string, unknown>>(target, 'SHOW ALL SLAVES STATUS')).filter((r) => String(r.Connection_name).startsWith('move_'));
      if (rows.every((r) => r.Slave_IO_Running !== 'Yes' && r.Slave_SQL_Running !== 'Yes')) return rows;
      const [w] = await adminQuery<{ w: string | number }>(target, 'SELECT MASTER_GTID_WAIT(?, 1) AS w', [head]);
      if (Number(w!.w) === 0) return rows;
      if (Date.now() > deadline) throw new Error(`the move connection on ${target} neither stopped nor reached ${head} within 120 s`);
    }
  };
  /** The restarted target applied nothing outside the move, and its move connection waits stopped. */
  const appliedNothingElse = async (source: string, target: string, planted: string[], decoyShards: number[], w: { ledger: Ledger }) => {
    // Writes on the decoy shards after the restart, then whatever an unfiltered connection would apply of them.
    await ackedOn(w.ledger, decoyShards, Date.now());
    const conn = await settled(source, target);
    assert.equal(await decoyRows(target, planted), 0, `the restarted ${target} applied none of ${source}'s writes to shards ${decoyShards.join(',')} (not moving)`);
    assert.equal(conn.length, 1, 'the move connection is still there');
    assert.deepEqual(conn.map((r) => [r.Slave_IO_Running, r.Slave_SQL_Running]), [['No', 'No']], 'the move connection did not start with the server');
  };

  /** What the restarted target applied (MySQL001A holds empty tables of the source's staying shards, planted before the move). */
  const decoysAround = (decoyShards: number[]) => async (source: HostPair, target: HostPair) => {
    const planted = await plantDecoys(source.master, target.master, decoyShards);
    return {
      afterRestart: (ledger: Ledger) => appliedNothingElse(source.master, target.master, planted, decoyShards, { ledger }),
      afterAbort: async () => assert.equal(await decoyRows(target.master, planted), 0, `nothing of shards ${decoyShards.join(',')} on the target after the abort`),
      cleanup: () => dropDecoys(target.master, planted),
    };
  };
  /**
   * The lock fence keeps the source's tables live but locked by the mover (a read there would
   * wait for it): what the source holds is read on its slave, once that has applied the source's
   * whole binlog.
   */
  const fencedRows = async (source: HostPair, shards: number[]) => {
    const [{ p }] = await adminQuery<{ p: string }>(source.master, 'SELECT @@GLOBAL.gtid_binlog_pos AS p') as [{ p: string }];
    const [{ w }] = await adminQuery<{ w: string | number }>(source.slave!, 'SELECT MASTER_GTID_WAIT(?, 30) AS w', [p]) as [{ w: string | number }];
    assert.equal(Number(w), 0, `${source.slave} reached ${source.master}'s position`);
    return (await Promise.all(shards.map(async (s) => (await ids(source.slave!, db(s))).map((x) => `${s}:${x}`)))).flat();
  };
  const engines: MoveEngine[] = [];
  let fx: MoveSuiteFixture;

  before(async () => {
    const started = await startTestCluster({ pairs: 2, shards: 8, prefix: 'shardkit-mariacrash-' });
    stop = started.stop;
    cluster = started.cluster;
    dir = started.dir;
    const config = cluster.config();
    if (config.storage.backend !== 'mysql') throw new Error('dev cluster config is not mysql');
    storage = { user: config.storage.user, ...(config.storage.password !== undefined ? { password: config.storage.password } : {}) };
    hosts = Object.fromEntries(Object.entries(config.hosts).map(([name, h]) => [name, { host: h.host!, port: h.port! }]));
    schema = resolveSchema(config);
    objectTables = fleetTables(schema, 'objects');
    admin = devHostAdmin(cluster);
    backing = new MemoryTopologyBacking(ShardMap.fromJSON(config.shardMap as ShardMapJson));
    for (let i = 0; i < 2; i++) {
      const kit = new ShardKit({ backend: new MysqlBackend({ hosts, storage, schema }), schema, topology: store() });
      await kit.ready();
      kits.push(kit);
    }
    for (let s = 0; s <= 7; s++) for (let i = 0; i < 10; i++) await kits[0]!.objects.create('pin', { s, i }, { shard: s });
    fx = {
      pairs: [PAIR1, PAIR2],
      hosts: Object.keys(hosts),
      kits,
      store,
      engine: () => {
        const e = engine();
        engines.push(e);
        return e;
      },
      service: async (topology) => {
        const kit = new ShardKit({ backend: new MysqlBackend({ hosts, storage, schema }), schema, topology, ownsResources: true });
        await kit.ready();
        return kit;
      },
      changeRow: async (host, shard) => {
        // Not binlogged: neither the target's slave nor any replication sees it, only verify.
        const c = await admin.connect(host);
        try {
          await c.query('SET SESSION sql_log_bin = 0');
          const [r] = await c.query(`UPDATE \`${db(shard)}\`.pins SET data = '{"changed":"by hand"}' ORDER BY local_id LIMIT 1`);
          assert.equal((r as { affectedRows: number }).affectedRows, 1);
        } finally {
          await c.end();
        }
      },
      openWrite: async (host, shard) => {
        const c = await admin.connect(host);
        await c.query('BEGIN');
        const [r] = await c.query(`INSERT INTO \`${db(shard)}\`.pins (data) VALUES ('{"open":"transaction"}')`);
        return {
          localId: String((r as { insertId: number }).insertId),
          commit: async () => {
            try {
              await c.query('COMMIT');
            } finally {
              await c.end();
            }
          },
        };
      },
      stallApply: async (target, shard) => {
        // The move connection's SQL thread waits on the lock; the source goes on writing.
        const c = await admin.connect(target);
        await c.query(`LOCK TABLES \`${db(shard)}\`.pins WRITE`);
        let held = true;
        return {
          release: async () => {
            if (!held) return;
            held = false;
            await c.query('UNLOCK TABLES');
            await c.end();
          },
        };
      },
      liveIds: (host, shard) => ids(host, db(shard)),
      objectTablesOn: async (host, shard) => (await tablesIn(host, db(shard))).filter((t) => objectTables.includes(t)),
      fencedAside: (host, shard) => tablesIn(host, `${db(shard)}_moved`),
      leftOnTarget: (target) => moveConnections(target),
      leftBehind: async (_source, target) => {
        // gtid_slave_pos is back to one strict mode accepts: every domain of the target's own binlog is in it.
        const [pos] = await adminQuery<{ bin: string; slave: string }>(target, 'SELECT @@GLOBAL.gtid_binlog_pos AS bin, @@GLOBAL.gtid_slave_pos AS slave');
        const domains = (p: string) => p.split(',').filter((x) => x !== '').map((x) => x.split('-')[0]);
        const missing = domains(pos!.bin).filter((d) => !domains(pos!.slave).includes(d)).map((d) => `domain ${d} of ${target}'s binlog (${pos!.bin}) is not in its gtid_slave_pos (${pos!.slave})`);
        return [...(await moveConnections(target)).map((c) => `move connection ${c} on ${target}`), ...missing];
      },
      servers: {
        kill: (host) => cluster.instance(host).kill(),
        // A killed master comes back as `dev up` brings it (read-only at start, writable as the map's master).
        start: restart,
        fencedRows,
        targetRestart: decoysAround([6, 7]),
      },
      ranges: {
        moverDies: { span: [2, 3], load: [0, 1, 2, 3] },
        sourceAtLagGate: { span: [2, 3], load: [0, 1, 2, 3] },
        targetAtCatchUp: { span: [4, 5], load: [4, 5, 6, 7] },
        sourceAfterFence: { span: [0, 1], load: [0, 1, 2, 3] },
      },
    };
  });
  after(async () => {
    for (const e of engines) await e.close().catch(() => undefined);
    for (const k of kits) await k.close();
    for (const s of stores) await s.close();
    await stop?.();
  });

  test('kill -9 of the source master inside the copy (the dump): the move aborts, --abort completes once it is back, a new move succeeds, 0 acknowledged writes lost', async () => {
    // Inside the copy: the source is killed just as the dump starts. The copy reads from the
    // source's slave (copy-source.ts), so a dump under way outlives the master: the move gets to
    // the lag gate either way, and stops there (the source is gone).
    const crashing = engine({
      dumpCopy: async (...a) => {
        await cluster.instance(PAIR1.master).kill();
        return moveAdmin(admin).dumpCopy(...a);
      },
    });
    engines.push(crashing);
    await sourceDiesBeforeFreeze(fx, { span: [0, 1], load: [0, 1, 2, 3] }, 'source killed (dump)', { engine: crashing, atLagGate: false });
  });

  // The shared scenarios: the source killed at the lag gate, the target at the catch-up (with the
  // decoys above: the restarted target applies nothing of shards 6..7), the source after the fence.
  runMoveSuite({ moverDies: [], killServers: true, fenceDiesWithSource: true, lagGate: true, openTransactions: true }, () => fx);

  test('the target master restarted while the mover is gone (lag gate): the move connection stays stopped, nothing of the source\'s other shards reaches the target, --resume switches with a clean verify', async () => {
    // Shards 6..7 move from MySQL002A to MySQL001A, which holds (empty) tables of shards 2..3 of
    // the source. The suite above moves shards 2..3 an odd or even number of times: they are put
    // on MySQL002A first if they are not there.
    const span: [number, number] = [6, 7];
    await forgetSwitched(fx);
    if ((await map()).locate(2).master !== PAIR2.master) {
      assert.equal((await suiteMove(fx, { start: { span: { first: 2, last: 3 }, target: PAIR2, holdMs: 30_000 } })).outcome, 'switched');
      await forgetSwitched(fx);
    }
    assert.equal((await map()).locate(6).master, PAIR2.master);
    const planted = await plantDecoys(PAIR2.master, PAIR1.master, [2, 3]);
    const w = startLoad(kits, [2, 3, 6, 7]);
    let dead = false;
    // The mover's store: it stops answering when the mover "dies", so the runner cannot even abort.
    const live = store();
    const dying = new Proxy(live, {
      get(t, p) {
        if (dead) throw new Error('the mover died');
        const v = Reflect.get(t, p) as unknown;
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(t) : v;
      },
    });
    try {
      await ackedOn(w.ledger, [2, 3, 6, 7], Date.now());
      await assert.rejects(
        runMove({
          store: dying, engine: engine(), hosts: Object.keys(hosts), start: { span: { first: 6, last: 7 }, target: PAIR1, holdMs: 30_000 },
          afterPhase: async (phase) => {
            if (phase === 'copied') {
              // The target dies and comes back while its move connection runs; then the mover dies too.
              await cluster.instance(PAIR1.master).kill();
              await restart();
              dead = true;
              throw new Error('the mover died');
            }
          },
        }),
        /the mover died/,
      );
      const rec = (await map()).moves().find((x) => x.range[0] === 6);
      assert.equal(rec?.phase, 'copied', 'the record waits in its phase for --resume');
      await appliedNothingElse(PAIR2.master, PAIR1.master, planted, [2, 3], w);
      const resumed = await runMove({ store: store(), engine: engine(), hosts: Object.keys(hosts), moveId: rec!.id });
      assert.equal(resumed.outcome, 'switched');
      assert.deepEqual(resumed.verify?.mismatches, []);
      for (let s = span[0]; s <= span[1]; s++) assert.equal((await map()).locate(s).master, PAIR1.master);
      assert.equal(await decoyRows(PAIR1.master, planted), 0, 'nothing of shards 2..3 on the target after the move');
      assert.deepEqual(await moveConnections(PAIR1.master), []);
      await ackedOn(w.ledger, [2, 3, 6, 7], Date.now());
    } finally {
      await restart();
      await w.stop();
      await dropDecoys(PAIR1.master, planted);
    }
    await noneLost(fx, w.ledger, 'target restarted, mover gone, --resume');
  });

  test('a move connection found running without its table filter (a target started without skip-slave-start) is stopped and the move refused', async () => {
    const name = 'move_unfiltered_guard';
    const c = await admin.connect(PAIR1.master);
    try {
      // Pointed at a closed port: the SQL thread runs (as after a server start), with nothing to apply.
      await c.query(`CHANGE MASTER '${name}' TO MASTER_HOST = '127.0.0.1', MASTER_PORT = 1, MASTER_USER = 'nobody', MASTER_USE_GTID = slave_pos, MASTER_CONNECT_RETRY = 1, DO_DOMAIN_IDS = (2)`);
      await c.query(`START SLAVE '${name}'`);
      assert.equal((await connectionStatus(c, name))?.sqlRunning, true);
      await assert.rejects(startFiltered(c, name, ['db00006.pins']), (err) => isShardKitError(err, 'SHARD_UNAVAILABLE') && /without its table filter/.test(err.message) && /--abort/.test(err.message));
      const st = await connectionStatus(c, name);
      assert.deepEqual([st?.ioRunning, st?.sqlRunning, st?.doTables], [false, false, ''], 'stopped, and not re-filtered');
    } finally {
      await c.query(`STOP SLAVE '${name}'`).catch(() => undefined);
      await c.query(`RESET SLAVE '${name}' ALL`).catch(() => undefined);
      await c.end();
    }
  });

  // Last: it leaves pair 1 failed over, without a slave.
  test('kill -9 of the source master inside the copy, for good: with the move aborting the pair fails over, writes go on on the new master, --abort finishes there; 0 acknowledged writes lost', async () => {
    // Before: promoteSlave refused any unswitched move, so the pair stayed down until the dead
    // master came back for the abort (the heal review: a night without writes to its shards).
    await forgetSwitched(fx);
    const span: [number, number] = [0, 1];
    const load = [0, 1, 2, 3];
    const { from, to } = await direction(fx, span);
    const crashing = engine({
      dumpCopy: async (...a) => {
        await cluster.instance(from.master).kill();
        return moveAdmin(admin).dumpCopy(...a);
      },
    });
    engines.push(crashing);
    const w = startLoad(fx.kits, load);
    try {
      await ackedOn(w.ledger, load, Date.now());
      await abortFails(fx, span, to, 30_000, [], async () => undefined, crashing);
      const id = leftAborting(await map(), span, from.master);
      // The emergency failover, as heal runs it: the map edit is no longer refused.
      const fleet = { config: cluster.config(), store: store(), admin, map: async () => map(), close: async () => undefined };
      const result = await emergencyFailover(fleet, from.master);
      assert.equal(result.newMaster, from.slave);
      const failedOver = Date.now();
      // The services follow the map: every loaded shard takes writes again, the dead host never back.
      await ackedOn(w.ledger, load, failedOver);
      const aborted = await suiteMove(fx, { moveId: id, abort: true });
      assert.equal(aborted.outcome, 'aborted');
      await cleanlyAborted(fx, span, from.slave!, to.master);
      await ackedOn(w.ledger, load, Date.now());
    } finally {
      await w.stop();
    }
    await noneLost(fx, w.ledger, 'source killed for good, failed over with the move aborting');
  });
});
