import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import mysql from 'mysql2/promise';
import { casMoveState } from '../../src/moves/move-state.js';
import { DevCluster } from '../../src/ops/dev-cluster.js';
import { freezeForFailover } from '../../src/ops/failover/failover-freeze.js';
import { createTopologyStore } from '../../src/topology/index.js';
import type { ShardMap } from '../../src/topology/shard-map.js';
import { startTestCluster } from '../mysql/cluster-fixture.js';
import { shardkit } from '../mysql/helpers.js';
import { ackedAfter, missingOn, newLedger, percentile, type Ledger } from './ledger.js';
import { httpWriteLoad, startService, type Service } from './serve-fixture.js';

/** Errors a writer may see while a frozen range switches: only a held write whose budget ran out (retried). */
function unexpectedErrors(ledger: Ledger): string[] {
  return [...ledger.errors.keys()].filter((k) => !/^503 .*SHARD_MOVING/.test(k));
}

describe('planned failover under load through two shardkit serve processes (real mariadbd)', () => {
  let fx: Awaited<ReturnType<typeof startTestCluster>>;
  let services: Service[] = [];
  const readMap = async (): Promise<ShardMap> => {
    const store = createTopologyStore({ kind: 'file', path: join(fx.dir, 'topology.json') });
    try {
      return (await store.read())!;
    } finally {
      await store.close();
    }
  };
  const unfrozen = (m: ShardMap) => m.moves().length === 0 && m.objectRanges().every((r) => r.frozen === undefined);

  /** Writers on shards 0 and 1 through both services while `run` fails over; waits for a write acknowledged after it. */
  async function underLoad<T>(run: () => Promise<{ code: number; stdout: string; stderr: string }>): Promise<{ res: { code: number; stdout: string; stderr: string }; ledger: Ledger; switchedAt: number }> {
    let release!: () => void;
    const live = newLedger();
    const running = httpWriteLoad(services, [0, 1], new Promise<void>((r) => (release = r)), 2, live);
    // Writes flowing before the switch (no fixed sleep: wait for acknowledgments).
    await ackedAfter(live, 0);
    const res = await run();
    const switchedAt = Date.now();
    try {
      if (res.code === 0) await ackedAfter(live, switchedAt);
      await sleep(200);
    } finally {
      release();
    }
    return { res, ledger: await running, switchedAt };
  }

  before(async () => {
    fx = await startTestCluster({ pairs: 1, shards: 2, modShards: 2, prefix: 'shardkit-prs-' });
    services = await Promise.all([0, 1].map(() => startService(fx.cluster.configPath, fx.dir)));
  });
  after(async () => {
    await Promise.all(services.map((s) => s.stop()));
    await fx?.stop();
  });

  test('a slave that does not catch up in time: PRECONDITION_FAILED, the freeze is lifted, the master writable, the slave replicating, nothing changed', async () => {
    const c = DevCluster.require(fx.dir);
    const before = await readMap();
    // The slave's SQL thread cannot commit while a global read lock is held there.
    const blocker = await c.instance('MySQL001B').connect();
    try {
      await blocker.query('FLUSH TABLES WITH READ LOCK');
      const w = await fetch(`${services[0]!.url}/v1/objects/pin`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ data: { blocked: true }, shard: 0 }) });
      assert.equal(w.status, 201);
      const res = await shardkit(['failover', 'MySQL001A', '--dir', fx.dir, '--timeout-ms', '1000']);
      assert.equal(res.code, 2, res.stderr);
      assert.match(res.stderr, /PRECONDITION_FAILED: slave MySQL001B did not reach .* MySQL001A is writable again and nothing changed/);
    } finally {
      await blocker.query('UNLOCK TABLES').catch(() => undefined);
      blocker.destroy();
    }
    const m = await readMap();
    assert.ok(unfrozen(m), JSON.stringify(m.toJSON()));
    assert.equal(m.objectRanges()[0]!.master, 'MySQL001A');
    assert.equal(m.modShardRanges()[0]!.master, 'MySQL001A');
    assert.ok(m.version > before.version);
    const [ro] = await c.instance('MySQL001A').admin<Array<{ v: number }>>('SELECT @@GLOBAL.read_only AS v');
    assert.equal(Number(ro!.v), 0);
    const [roB] = await c.instance('MySQL001B').admin<Array<{ v: number }>>('SELECT @@GLOBAL.read_only AS v');
    assert.equal(Number(roB!.v), 1);
    await c.waitForReplication();
    const w = await fetch(`${services[1]!.url}/v1/objects/pin`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ data: { after: true }, shard: 1 }) });
    assert.equal(w.status, 201);
  });

  test('0 acknowledged writes lost, writes held (never refused) during the switch, later writes go to the new master, the old master is its slave', async (t) => {
    const { res, ledger, switchedAt } = await underLoad(() => shardkit(['failover', 'MySQL001A', '--dir', fx.dir, '--json']));
    assert.equal(res.code, 0, res.stderr);
    const r = JSON.parse(res.stdout) as { newMaster: string; oldMasterIsSlave: boolean; writePauseMs: number; mapVersion: number; frozenRanges: number };
    assert.equal(r.newMaster, 'MySQL001B');
    assert.equal(r.oldMasterIsSlave, true);
    assert.equal(r.frozenRanges, 1);
    assert.ok(unfrozen(await readMap()));
    // With the freeze, a write that met the read-only master was held and sent to the new one:
    // no writer saw SHARD_UNAVAILABLE (read_only). Without it (the fence alone) they did.
    assert.deepEqual(unexpectedErrors(ledger), []);

    const c = DevCluster.require(fx.dir);
    assert.deepEqual(await missingOn(c, 'MySQL001B', ledger.acked), []);
    const later = ledger.acked.filter((a) => a.at > switchedAt);
    assert.ok(later.length > 0, 'writes continued after the failover');
    // The old master is read-only and a replicating slave of the new one: every write after the
    // switch was committed on MySQL001B (its own GTIDs) and reached MySQL001A through replication.
    const [ro] = await c.instance('MySQL001A').admin<Array<{ v: number }>>('SELECT @@GLOBAL.read_only AS v');
    assert.equal(Number(ro!.v), 1);
    const [bId] = await c.instance('MySQL001B').admin<Array<{ id: number }>>('SELECT @@server_id AS id');
    const [bPos] = await c.instance('MySQL001B').admin<Array<{ p: string }>>('SELECT @@GLOBAL.gtid_binlog_pos AS p');
    assert.match(bPos!.p, new RegExp(`^1-${bId!.id}-\\d+$`));
    await c.waitForReplication();
    assert.deepEqual(await missingOn(c, 'MySQL001A', ledger.acked), []);
    const st = await c.status();
    const a = st.find((x) => x.name === 'MySQL001A')!;
    assert.deepEqual([a.role, a.master, a.replication], ['slave', 'MySQL001B', 'running']);
    const verify = await shardkit(['pair', 'verify', 'MySQL001B', '--dir', fx.dir, '--json']);
    assert.equal(verify.code, 0, verify.stdout + verify.stderr);
    t.diagnostic(`${ledger.acked.length} acknowledged, 0 lost; freeze-to-switch ${r.writePauseMs} ms; longest gap between a writer's acknowledgments p50 ${percentile(ledger.gaps, 50)} ms, max ${Math.max(0, ...ledger.gaps)} ms; errors ${JSON.stringify([...ledger.errors])}`);
  });

  test('--config FILE (a fleet named by a config, admin accounts from the environment, no dev cluster): failover back under load, 0 lost', async (t) => {
    const c = DevCluster.require(fx.dir);
    // An operator's admin account over TCP (the config's application user has no SUPER).
    const adminPassword = 'fo-admin-pw';
    for (const host of ['MySQL001A', 'MySQL001B']) {
      await c.instance(host).admin('SET SESSION sql_log_bin = 0', `CREATE USER IF NOT EXISTS 'fo_admin'@'%' IDENTIFIED BY '${adminPassword}'`, "GRANT ALL PRIVILEGES ON *.* TO 'fo_admin'@'%' WITH GRANT OPTION");
    }
    const cfgDir = mkdtempSync(join(tmpdir(), 'shardkit-fo-config-'));
    try {
      // The servers by address only: nothing of the dev cluster (sockets, cluster.json) is used.
      const config = JSON.parse(readFileSync(fx.cluster.configPath, 'utf8')) as { hosts: Record<string, { host: string; port: number }> };
      assert.deepEqual(Object.values(config.hosts).map((h) => h.host), ['127.0.0.1', '127.0.0.1']);
      const file = join(cfgDir, 'prod.json');
      writeFileSync(file, JSON.stringify(config, null, 2));
      const env = { SHARDKIT_ADMIN_USER: 'fo_admin', SHARDKIT_ADMIN_PASSWORD: adminPassword, SHARDKIT_REPL_USER: c.state.replUser, SHARDKIT_REPL_PASSWORD: c.state.replPassword };
      const { res, ledger } = await underLoad(() => shardkit(['failover', 'MySQL001B', '--config', file, '--json'], env));
      assert.equal(res.code, 0, res.stderr);
      const r = JSON.parse(res.stdout) as { newMaster: string; oldMasterIsSlave: boolean };
      assert.deepEqual([r.newMaster, r.oldMasterIsSlave], ['MySQL001A', true]);
      assert.deepEqual(unexpectedErrors(ledger), []);
      assert.deepEqual(await missingOn(c, 'MySQL001A', ledger.acked), []);
      const m = await readMap();
      assert.ok(unfrozen(m));
      assert.equal(m.objectRanges()[0]!.master, 'MySQL001A');
      assert.equal(m.objectRanges()[0]!.slave, 'MySQL001B');
      // MySQL001B replicates from MySQL001A now, through the replication account of the environment.
      const conn = await mysql.createConnection({ host: '127.0.0.1', port: config.hosts.MySQL001B!.port, user: 'fo_admin', password: adminPassword });
      try {
        const [rows] = await conn.query('SHOW SLAVE STATUS');
        const st = (rows as Array<Record<string, unknown>>)[0]!;
        assert.deepEqual([st.Master_Port, st.Slave_IO_Running, st.Slave_SQL_Running], [config.hosts.MySQL001A!.port, 'Yes', 'Yes']);
      } finally {
        await conn.end();
      }
      const verify = await shardkit(['pair', 'verify', 'MySQL001A', '--config', file, '--json'], env);
      assert.equal(verify.code, 0, verify.stdout + verify.stderr);
      t.diagnostic(`--config: ${ledger.acked.length} acknowledged, 0 lost; errors ${JSON.stringify([...ledger.errors])}`);
    } finally {
      rmSync(cfgDir, { recursive: true, force: true });
      // The dev cluster's record of roles follows the map again (a --config failover cannot update it).
      const cl = DevCluster.require(fx.dir);
      cl.server('MySQL001A').role = 'master';
      delete cl.server('MySQL001A').master;
      cl.server('MySQL001B').role = 'slave';
      cl.server('MySQL001B').master = 'MySQL001A';
      cl.save();
    }
  });

  test('a failover that crashed after its freeze: services ignore the freeze past its budget, and the next failover lifts it first', async () => {
    const store = createTopologyStore({ kind: 'file', path: join(fx.dir, 'topology.json') });
    try {
      // What a crashed run leaves: the ranges frozen by a failover record, the master still writable.
      await casMoveState(store, (m) => freezeForFailover(m, 'MySQL001A', 'MySQL001B', { holdMs: 1 }));
    } finally {
      await store.close();
    }
    assert.ok(!unfrozen(await readMap()));
    const w = await fetch(`${services[0]!.url}/v1/objects/pin`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ data: { stale: true }, shard: 0 }) });
    assert.equal(w.status, 201, await w.text());
    const res = await shardkit(['failover', 'MySQL001A', '--dir', fx.dir, '--json']);
    assert.equal(res.code, 0, res.stderr);
    assert.match(res.stderr, /lifting the freeze of an earlier failover of MySQL001A/);
    const m = await readMap();
    assert.ok(unfrozen(m));
    assert.equal(m.objectRanges()[0]!.master, 'MySQL001B');
  });
});
