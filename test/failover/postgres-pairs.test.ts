import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ShardKit } from '../../src/kit/shard-kit.js';
import { devClusterDown, devClusterStatus, devUp, DevCluster } from '../../src/ops/dev-cluster.js';
import { pgServer } from '../../src/ops/dev/dev-postgres.js';
import { casMoveState } from '../../src/moves/move-state.js';
import { freezeForFailover } from '../../src/ops/failover/failover-freeze.js';
import { createTopologyStore } from '../../src/topology/index.js';
import type { MoveRecord } from '../../src/topology/shard-map.js';
import { shardkit } from '../mysql/helpers.js';
import { ackedAfter, newLedger, writeLoad } from './ledger.js';
import { missingOnPg } from './pg-ledger.js';

describe('PostgreSQL pairs: dev up --engine postgres, failover with pg_promote(), rebuild-slave with pg_basebackup (real PostgreSQL 15)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-pgpair-'));
  let kit: ShardKit;
  before(async () => {
    await devUp({ dir, engine: 'postgres', pairs: 1, shards: 2, modShards: 2 });
    kit = await ShardKit.open({ configPath: join(dir, 'shardkit.json'), dataDir: dir });
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

  /**
   * PG001A is the master: its standby PG001B is down while it acknowledges five writes, then it
   * dies and PG001B is failed over to. The report counts at least the writes lost; PG001A is then
   * rebuilt as PG001B's standby.
   */
  const unsentWritesCounted = async (tag: string) => {
    const c = DevCluster.require(dir);
    await pgServer(c, 'PG001B').stop();
    const acked = [];
    for (let i = 0; i < 5; i++) acked.push(await kit.objects.create('pin', { [tag]: i }, { shard: i % 2 }));
    await pgServer(c, 'PG001A').kill();
    await pgServer(c, 'PG001B').start();
    const res = await shardkit(['failover', 'PG001A', '--emergency', '--dir', dir, '--json']);
    assert.equal(res.code, 0, res.stderr);
    const report = JSON.parse(res.stdout) as { divergedTransactions?: number };
    const lost = await missingOnPg(c, 'PG001B', acked);
    assert.equal(lost.length, 5, 'the five writes never reached the standby');
    assert.ok(report.divergedTransactions! >= lost.length, `${lost.length} acknowledged writes lost, ${report.divergedTransactions} reported`);
    const text = await shardkit(['pair', 'rebuild-slave', 'PG001B', '--dir', dir]);
    assert.equal(text.code, 0, text.stderr);
  };

  test('dev up: a master and a streaming standby, a postgres config, every shard created', async () => {
    const st = await devClusterStatus(DevCluster.require(dir));
    assert.deepEqual(st.map((r) => [r.name, r.role, r.replication]), [['PG001A', 'master', '-'], ['PG001B', 'slave', 'running']]);
    const pin = await kit.objects.create('pin', { hello: 'pg' }, { shard: 1 });
    assert.deepEqual((await kit.objects.get(pin.id)).data, { hello: 'pg' });
    // Idle for a while after its last write, a standby that replayed everything is 0 s behind
    // (the old status showed the time since the last replayed commit as lag).
    await sleep(1600);
    for (let i = 0; i < 100 && (await devClusterStatus(DevCluster.require(dir)))[1]!.replicationLagSeconds !== 0; i++) await sleep(100);
    assert.equal((await devClusterStatus(DevCluster.require(dir)))[1]!.replicationLagSeconds, 0);
  });

  test('a running shard move holds a range of the master: failover, planned or --emergency, is refused before the master is stopped or its standby promoted', async () => {
    const c = DevCluster.require(dir);
    const store = createTopologyStore(c.config().topologyStore, { dataDir: dir });
    const now = Date.now();
    const move: MoveRecord = { id: 'move-0-0-running', kind: 'move', range: [0, 0], source: { master: 'PG001A', slave: 'PG001B' }, target: { master: 'PG002A', slave: 'PG002B' }, phase: 'copied', holdMs: 400, startedAt: now, updatedAt: now };
    try {
      const held = await casMoveState(store, (m) => ({ ...m.toJSON(), moves: [move] }));
      for (const args of [['--emergency'], []]) {
        const res = await shardkit(['failover', 'PG001A', '--dir', dir, ...args]);
        assert.equal(res.code, 2, res.stderr);
        assert.match(res.stderr, /^shardkit: SHARD_FROZEN: .*move-0-0-running/);
      }
      assert.equal((await store.read())!.version, held.version);
      const st = await devClusterStatus(c);
      assert.deepEqual(st.map((r) => [r.name, r.role, r.replication]), [['PG001A', 'master', '-'], ['PG001B', 'slave', 'running']]);
      const [rec] = await pgServer(c, 'PG001B').sql<{ rec: boolean }>('SELECT pg_is_in_recovery() AS rec');
      assert.equal(rec?.rec, true, 'PG001B is still a standby');
      await kit.objects.create('pin', { refused: 'failover' }, { shard: 1 });
    } finally {
      await casMoveState(store, (m) => {
        const { moves: _recorded, ...rest } = m.toJSON();
        return rest;
      });
      await store.close();
    }
  });

  test('planned failover under load: writes held, never refused (the ranges frozen, the read-only fence), 0 acknowledged writes lost, the old master streams from the new one', async () => {
    // Before: no freeze; the old master was stopped under the writers, who got 503s for about a second.
    let release!: () => void;
    const live = newLedger();
    const running = writeLoad([kit], [0, 1], new Promise<void>((r) => (release = r)), 2, live);
    await ackedAfter(live, Date.now());
    // A budget no machine's speed decides: the assertion is about the hold.
    const res = await shardkit(['failover', 'PG001A', '--dir', dir, '--hold-ms', '60000', '--json']);
    const switchedAt = Date.now();
    try {
      if (res.code === 0) await ackedAfter(live, switchedAt);
      await sleep(200);
    } finally {
      release();
    }
    const ledger = await running;
    assert.equal(res.code, 0, res.stderr);
    const r = JSON.parse(res.stdout) as { newMaster: string; frozenRanges: number };
    assert.equal(r.newMaster, 'PG001B');
    assert.equal(r.frozenRanges, 1);
    assert.deepEqual([...ledger.errors], [], 'no write refused during the failover');
    const c = DevCluster.require(dir);
    assert.deepEqual(await missingOnPg(c, 'PG001B', ledger.acked), []);
    // The fence does not outlive the failover: a later promotion of PG001A must take writes.
    const [ro] = await pgServer(c, 'PG001A').sql<{ v: string }>("SELECT current_setting('default_transaction_read_only') AS v");
    assert.equal(ro!.v, 'off');
    const st = await devClusterStatus(c);
    assert.deepEqual(st.map((r) => [r.name, r.role, r.replication]), [['PG001A', 'slave', 'running'], ['PG001B', 'master', '-']]);
  });

  test('kill -9 of the master, failover --emergency: writes go to the promoted standby; the restarted old master is read-only until rebuilt', async () => {
    const c = DevCluster.require(dir);
    let release!: () => void;
    const live = newLedger();
    const running = writeLoad([kit], [0, 1], new Promise<void>((r) => (release = r)), 2, live);
    await sleep(500);
    // A planned failover of PG001B killed after its freeze left the freeze behind (its budget run
    // out). Before, that record refused this failover (SHARD_FROZEN), and heal's, for good.
    const store = createTopologyStore(DevCluster.require(dir).config().topologyStore, { dataDir: dir });
    try {
      await casMoveState(store, (m) => freezeForFailover(m, 'PG001B', 'PG001A', { holdMs: 1, now: Date.now() - 60_000 }));
    } finally {
      await store.close();
    }
    await pgServer(c, 'PG001B').kill();
    const started = Date.now();
    const res = await shardkit(['failover', 'PG001B', '--emergency', '--dir', dir, '--json']);
    const switched = Date.now();
    try {
      assert.equal(res.code, 0, res.stderr);
      await ackedAfter(live, started);
      await sleep(200);
    } finally {
      release();
    }
    const ledger = await running;
    assert.ok(ledger.acked.some((a) => a.at > started), 'writes resumed on the new master');
    // Asynchronous standby: what the killed master acknowledged and never sent is lost, and the
    // failover says how much at most (commits in its WAL past what the standby received).
    const report = JSON.parse(res.stdout) as { divergedTransactions?: number; syncStandby?: boolean };
    assert.equal(report.syncStandby, false);
    assert.equal(typeof report.divergedTransactions, 'number', res.stdout);
    const lost = await missingOnPg(c, 'PG001A', ledger.acked.filter((a) => a.at < started));
    assert.ok(lost.length <= report.divergedTransactions!, `${lost.length} acknowledged writes lost, ${report.divergedTransactions} reported`);

    await devUp({ dir, skipInit: true });
    await assert.rejects(pgServer(c, 'PG001B').sql("INSERT INTO db00000.pins (data) VALUES ('{}')", [], 'shardkit'), /read-only transaction/);
    const rebuilt = await shardkit(['pair', 'rebuild-slave', 'PG001A', '--dir', dir, '--json']);
    assert.equal(rebuilt.code, 0, rebuilt.stderr);
    const st = await devClusterStatus(DevCluster.require(dir));
    assert.deepEqual(st.map((r) => [r.name, r.role, r.replication]), [['PG001A', 'master', '-'], ['PG001B', 'slave', 'running']]);
    // The rebuilt standby holds what the new master acknowledged (it streams; give it a moment).
    // Acknowledged after the map named the new master: those must all be on it.
    const acked = ledger.acked.filter((a) => a.at > switched);
    for (let i = 0; i < 100 && (await missingOnPg(c, 'PG001B', acked)).length > 0; i++) await sleep(100);
    assert.deepEqual(await missingOnPg(c, 'PG001B', acked), []);
    const bad = await shardkit(['failover', 'PG001B', '--dir', dir]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /not a master/);
  });
  test('asynchronous standby: writes the dead master acknowledged and never sent are counted by failover --emergency', async () => {
    await unsentWritesCounted('unsent');
  });

  test('a master promoted moments ago (its control file still names the old timeline) dies with writes its standby never got: failover --emergency counts them on the new timeline', async () => {
    // B is the master and A its standby; a planned failover makes A the master on a new timeline.
    // Until the checkpoint it starts once promoted ends, its control file names the old timeline
    // (how long that lasts depends on its dirty buffers: test/ops/pg-waldump-commits.test.ts checks
    // the choice of timeline itself).
    const planned = await shardkit(['failover', 'PG001B', '--dir', dir, '--json']);
    assert.equal(planned.code, 0, planned.stderr);
    await unsentWritesCounted('newTimeline');
  });
});
