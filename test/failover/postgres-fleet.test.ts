/**
 * A PostgreSQL fleet given by `--config` alone (#31): the servers of a dev cluster, but reached as
 * a fleet is, over the network with SHARDKIT_ADMIN_USER, and the slave rebuilt by the operator's
 * SHARDKIT_REBUILD_COMMAND (test/failover/pg-rebuild-hook.ts plays it). A service started first
 * writes throughout, with a ledger:
 * - planned failover: the master fenced read-only, the standby promoted once it replayed
 *   everything; 0 acknowledged writes lost, and the old master refuses writes;
 * - rebuild-slave --sync through the hook: the old master streams from the new one, as its
 *   synchronous standby, and the map names it;
 * - kill -9 of the master, failover --emergency: the standby promoted, the old master reported
 *   as unfenced (no SHARDKIT_FENCE_COMMAND); with the synchronous standby 0 acknowledged writes lost;
 * - rebuilt again, then kill -9 of the master under `shardkit heal --config --mode act`: failed
 *   over by the supervisor, 0 acknowledged writes lost;
 * - a fleet without admin credentials, or with the rebuild hook missing or failing: one clear
 *   line, nothing changed.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ShardKit } from '../../src/kit/shard-kit.js';
import { devClusterDown, devUp, DevCluster } from '../../src/ops/dev-cluster.js';
import { pgServer } from '../../src/ops/dev/dev-postgres.js';
import { createTopologyStore } from '../../src/topology/index.js';
import { loadConfigFile } from '../../src/config/config.js';
import { abortMove, addMove, casMoveState } from '../../src/moves/move-state.js';
import { shardkit } from '../mysql/helpers.js';
import { ackedAfter, newLedger, writeLoad, type Ledger } from './ledger.js';
import { missingOnPg } from './pg-ledger.js';
import { startHeal, type Decision } from './heal-process.js';

const HOOK = `${process.execPath} --import tsx ${resolve('test/failover/pg-rebuild-hook.ts')}`;

describe('PostgreSQL fleet by --config: failover over SQL, rebuild through the operator\'s hook (real PostgreSQL 15)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-pgfleet-'));
  const config = join(dir, 'shardkit.json');
  const env = { SHARDKIT_ADMIN_USER: 'postgres', SHARDKIT_TEST_DEV_DIR: dir };
  let kit: ShardKit;
  before(async () => {
    await devUp({ dir, engine: 'postgres', pairs: 1, shards: 2, modShards: 2, semiSync: true });
    kit = await ShardKit.open({ configPath: config, dataDir: dir });
  });
  after(async () => {
    await kit?.close();
    try {
      const c = DevCluster.open(dir);
      if (c) await devClusterDown(c);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  const masterOf = async (shard: number): Promise<string> => {
    const store = createTopologyStore(loadConfigFile(config).topologyStore, { dataDir: dir });
    try {
      return (await store.read())!.locate(shard).master;
    } finally {
      await store.close();
    }
  };

  /** Runs `during` while the service writes to shards 0 and 1; the ledger once a write was acknowledged after it. */
  async function underLoad<T>(during: () => Promise<T>, ok: (v: T) => boolean = () => true): Promise<{ value: T; ledger: Ledger }> {
    let release!: () => void;
    const live = newLedger();
    const running = writeLoad([kit], [0, 1], new Promise<void>((r) => (release = r)), 2, live);
    let value: T;
    try {
      await ackedAfter(live, Date.now());
      value = await during();
      if (ok(value)) await ackedAfter(live, Date.now());
    } finally {
      release();
    }
    return { value, ledger: await running };
  }

  const cli = (args: string[], extraEnv: Record<string, string> = {}) => underLoad(() => shardkit(args, { ...env, ...extraEnv }), (r) => r.code === 0);

  test('bad input: no admin user, or no rebuild hook, or a failing one: one line, exit non-zero, the map unchanged', async () => {
    const before = await masterOf(0);
    const noAdmin = await shardkit(['failover', 'PG001A', '--config', config], { SHARDKIT_TEST_DEV_DIR: dir, SHARDKIT_ADMIN_USER: '' });
    assert.notEqual(noAdmin.code, 0);
    assert.match(noAdmin.stderr, /set SHARDKIT_ADMIN_USER \(a PostgreSQL superuser\)/);
    assert.equal(noAdmin.stderr.trim().split('\n').length, 1, noAdmin.stderr);
    const noHook = await shardkit(['pair', 'rebuild-slave', 'PG001A', '--config', config], env);
    assert.notEqual(noHook.code, 0);
    assert.match(noHook.stderr, /set SHARDKIT_REBUILD_COMMAND/);
    const failing = await shardkit(['pair', 'rebuild-slave', 'PG001A', '--config', config], { ...env, SHARDKIT_REBUILD_COMMAND: 'echo "no route to the slave" >&2; exit 7' });
    assert.notEqual(failing.code, 0);
    assert.match(failing.stderr, /SHARDKIT_REBUILD_COMMAND failed for PG001B \(exit 7: no route to the slave\): the map is unchanged/);
    assert.equal(await masterOf(0), before);
    assert.equal((await pgServer(DevCluster.require(dir), 'PG001B').sql<{ r: boolean }>('SELECT pg_is_in_recovery() AS r'))[0]!.r, true, 'the standby was not touched');
    // A move holding the master's ranges: the failover is refused before anything is fenced.
    const store = createTopologyStore(loadConfigFile(config).topologyStore, { dataDir: dir });
    try {
      await casMoveState(store, (m) => addMove(m, { id: 'move-held', span: { first: 0, last: 0 }, target: { master: 'PG009A' } }));
      const held = await shardkit(['failover', 'PG001A', '--config', config], env);
      assert.notEqual(held.code, 0);
      const [ro] = await pgServer(DevCluster.require(dir), 'PG001A').sql<{ ro: string }>("SELECT current_setting('default_transaction_read_only') AS ro");
      assert.equal(ro!.ro, 'off', `the master was not fenced: ${held.stderr}`);
      await casMoveState(store, (m) => abortMove(m, 'move-held'));
    } finally {
      await store.close();
    }
  });

  test('planned failover, rebuild through the hook, kill -9 and emergency failover, then heal by itself: 0 acknowledged writes lost at each step', async () => {
    const c = DevCluster.require(dir);
    // Planned: PG001A fenced read-only, PG001B promoted.
    const planned = await cli(['failover', 'PG001A', '--config', config, '--json']);
    assert.equal(planned.value.code, 0, planned.value.stderr);
    const p = JSON.parse(planned.value.stdout) as { kind: string; newMaster: string; oldMasterFenced: boolean; oldMasterIsSlave: boolean };
    assert.deepEqual([p.kind, p.newMaster, p.oldMasterFenced, p.oldMasterIsSlave], ['planned', 'PG001B', true, false]);
    assert.equal(await masterOf(0), 'PG001B');
    assert.deepEqual(await missingOnPg(c, 'PG001B', planned.ledger.acked), []);
    assert.deepEqual([...planned.ledger.errors.keys()].filter((code) => code !== 'SHARD_UNAVAILABLE' && code !== 'SHARD_MOVING'), [], 'only retryable refusals');
    await assert.rejects(pgServer(c, 'PG001A').sql('CREATE TABLE fenced_probe (x int)', [], 'shardkit'), /read-only transaction/);

    // The old master rebuilt as the new one's synchronous standby by the operator's command.
    const rebuilt = await cli(['pair', 'rebuild-slave', 'PG001B', '--slave', 'PG001A', '--sync', '--config', config, '--json'], { SHARDKIT_REBUILD_COMMAND: HOOK });
    assert.equal(rebuilt.value.code, 0, rebuilt.value.stderr);
    assert.deepEqual(JSON.parse(rebuilt.value.stdout).slave, 'PG001A');
    const [sync] = await pgServer(c, 'PG001B').sql<{ names: string; state: string }>("SELECT current_setting('synchronous_standby_names') AS names, (SELECT sync_state FROM pg_stat_replication LIMIT 1) AS state");
    assert.deepEqual([sync!.names, sync!.state], ['"PG001A"', 'sync']);
    assert.deepEqual(await missingOnPg(c, 'PG001B', rebuilt.ledger.acked), []);

    // kill -9 of the master (the postmaster) under load, then the emergency failover by --config.
    const emergency = await underLoad(async () => {
      await pgServer(c, 'PG001B').kill();
      return shardkit(['failover', 'PG001B', '--emergency', '--config', config, '--json'], env);
    }, (r) => r.code === 0);
    assert.equal(emergency.value.code, 0, emergency.value.stderr);
    const e = JSON.parse(emergency.value.stdout) as { newMaster: string; oldMasterFenced: boolean; oldMasterShot?: string };
    assert.deepEqual([e.newMaster, e.oldMasterFenced, e.oldMasterShot], ['PG001A', false, 'unfenced']);
    assert.equal(await masterOf(1), 'PG001A');
    const acked = [...planned.ledger.acked, ...rebuilt.ledger.acked, ...emergency.ledger.acked];
    assert.deepEqual(await missingOnPg(c, 'PG001A', acked), [], 'a synchronous standby: nothing acknowledged is lost');

    // The pair made whole again; then shardkit heal on the fleet by --config does the next one by itself.
    const again = await cli(['pair', 'rebuild-slave', 'PG001A', '--slave', 'PG001B', '--sync', '--config', config, '--json'], { SHARDKIT_REBUILD_COMMAND: HOOK });
    assert.equal(again.value.code, 0, again.value.stderr);
    process.env.SHARDKIT_ADMIN_USER = 'postgres';
    const heal = startHeal(['--config', config, '--mode', 'act', '--dead-after', '2', '--interval-ms', '200']);
    let healed;
    try {
      await heal.ready;
      healed = await underLoad(async () => {
        await pgServer(c, 'PG001A').kill();
        return heal.next((d: Decision) => d.verdict === 'failover' && d.master === 'PG001A');
      });
    } finally {
      await heal.stop();
    }
    assert.equal(healed.value.failover?.newMaster, 'PG001B', JSON.stringify(healed.value));
    assert.equal(await masterOf(0), 'PG001B');
    assert.deepEqual(await missingOnPg(c, 'PG001B', [...acked, ...again.ledger.acked, ...healed.ledger.acked]), []);
  });
});
