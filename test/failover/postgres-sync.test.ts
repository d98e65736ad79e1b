/**
 * PostgreSQL pairs with a synchronous standby (`dev up --engine postgres --sync`): commits wait
 * for the standby's flush, so kill -9 of the master's postmaster under two services' writes, then
 * `failover --emergency`, loses no acknowledged write. The promoted standby does not wait for a
 * standby it does not have (writes resume), and rebuild-slave makes the pair synchronous again.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ShardKit } from '../../src/kit/shard-kit.js';
import { DevCluster } from '../../src/ops/dev-cluster.js';
import { startTestCluster } from '../mysql/cluster-fixture.js';
import { pgServer } from '../../src/ops/dev/dev-postgres.js';
import { syncStandbyOf } from '../../src/ops/postgres/pg-sync-standby.js';
import { shardkit } from '../mysql/helpers.js';
import { ackedAfter, newLedger, writeLoad } from './ledger.js';
import { startHeal } from './heal-process.js';
import { postgresChaos } from '../chaos/chaos-engines.js';
import { ensureBuilt } from '../cli/cli-harness.js';
import { missingOnPg } from './pg-ledger.js';

/** Resolves once `master` streams to `standby` as a synchronous standby. */
async function syncStreaming(c: DevCluster, master: string, standby: string): Promise<void> {
  for (let i = 0; ; i++) {
    const rows = await pgServer(c, master).sql<{ name: string; state: string }>('SELECT application_name AS name, sync_state AS state FROM pg_stat_replication');
    if (rows.some((r) => r.name === standby && r.state === 'sync')) return;
    if (i > 600) throw new Error(`${standby} never became ${master}'s synchronous standby: ${JSON.stringify(rows)}`);
    await sleep(100);
  }
}

describe('PostgreSQL pairs with a synchronous standby (dev up --sync, real PostgreSQL 15)', () => {
  let fx: Awaited<ReturnType<typeof startTestCluster>>;
  let dir: string;
  const kits: ShardKit[] = [];
  before(async () => {
    fx = await startTestCluster({ engine: 'postgres', pairs: 1, shards: 2, modShards: 2, semiSync: true, prefix: 'shardkit-pgsync-' });
    dir = fx.dir;
    ensureBuilt();
    for (let i = 0; i < 2; i++) kits.push(await ShardKit.open({ configPath: join(dir, 'shardkit.json'), dataDir: dir }));
  });
  after(async () => {
    for (const kit of kits) await kit.close();
    await fx?.stop();
  });

  test('kill -9 of the postmaster under two services, failover --emergency: 0 acknowledged writes lost; the new master takes writes; rebuild-slave makes the pair synchronous again', async () => {
    const c = DevCluster.require(dir);
    assert.equal(await syncStandbyOf(pgServer(c, 'PG001A')), 'PG001B');
    await syncStreaming(c, 'PG001A', 'PG001B');

    let release!: () => void;
    const live = newLedger();
    const running = writeLoad(kits, [0, 1], new Promise<void>((r) => (release = r)), 2, live);
    await ackedAfter(live, Date.now());
    // The postmaster alone, as a crash of the supervisor would: its backends may still be running.
    const pid = pgServer(c, 'PG001A').pid!;
    const killedAt = Date.now();
    process.kill(pid, 'SIGKILL');
    const res = await shardkit(['failover', 'PG001A', '--emergency', '--dir', dir, '--json']);
    const switched = Date.now();
    try {
      assert.equal(res.code, 0, res.stderr);
      await ackedAfter(live, switched);
    } finally {
      release();
    }
    const ledger = await running;
    const report = JSON.parse(res.stdout) as { newMaster: string; divergedTransactions?: number; syncStandby?: boolean };
    assert.equal(report.newMaster, 'PG001B');
    assert.equal(report.syncStandby, true);
    assert.equal(typeof report.divergedTransactions, 'number', res.stdout);
    assert.ok(ledger.acked.filter((a) => a.at < killedAt).length > 0);
    assert.deepEqual(await missingOnPg(c, 'PG001B', ledger.acked), [], 'acknowledged writes lost by the failover');
    // The promoted standby has no standby of its own until the rebuild, so it does not wait for one.
    assert.equal(await syncStandbyOf(pgServer(c, 'PG001B')), undefined);

    const rebuilt = await shardkit(['pair', 'rebuild-slave', 'PG001B', '--dir', dir, '--json']);
    assert.equal(rebuilt.code, 0, rebuilt.stderr);
    assert.equal(await syncStandbyOf(pgServer(c, 'PG001B')), 'PG001A');
    await syncStreaming(c, 'PG001B', 'PG001A');
    const after = await kits[0]!.objects.create('pin', { afterRebuild: true }, { shard: 0 });
    assert.deepEqual(await missingOnPg(c, 'PG001A', [after]), [], 'a commit acknowledged by the synchronous pair is on its standby');
  });

  test('a frozen (SIGSTOP) master under two services: heal in act mode fails it over without waiting for it, 0 acknowledged writes lost, and it never serves writes again', async () => {
    // Before: the standby kept reporting "streaming" for wal_receiver_timeout (60 s), so heal never
    // saw it agree that the master was lost, and the failover's pg_ctl stop waited 60 s on it.
    const c = DevCluster.require(dir);
    await syncStreaming(c, 'PG001B', 'PG001A');
    const heal = startHeal(['--dir', dir, '--mode', 'act', '--interval-ms', '200', '--dead-after', '3']);
    let release!: () => void;
    const live = newLedger();
    const running = writeLoad(kits, [0, 1], new Promise<void>((r) => (release = r)), 2, live);
    const frozen = postgresChaos.pids(c, 'PG001B');
    try {
      await heal.ready;
      await ackedAfter(live, Date.now());
      for (const pid of frozen) process.kill(pid, 'SIGSTOP');
      const stoppedAt = Date.now();
      // Bounded, so old code fails here instead of hanging the suite (it waited for ever).
      const d = await Promise.race([heal.next((x) => x.verdict === 'failover'), sleep(90_000, undefined, { ref: false })]);
      assert.ok(d !== undefined, `no failover of the frozen master in 90 s; decisions: ${JSON.stringify(heal.decisions.map((x) => x.verdict))}`);
      assert.equal(d.error, undefined, d.error);
      assert.equal(d.failover?.newMaster, 'PG001A');
      // Thawed now: a zombie would finish what it held and take writes again.
      for (const pid of frozen) try { process.kill(pid, 'SIGCONT'); } catch { /* killed by the failover */ }
      await ackedAfter(live, stoppedAt);
      await ackedAfter(live, Date.now());
    } finally {
      for (const pid of frozen) try { process.kill(pid, 'SIGCONT'); } catch { /* gone */ }
      release();
      await heal.stop();
    }
    const ledger = await running;
    assert.deepEqual(await missingOnPg(c, 'PG001A', ledger.acked), [], 'acknowledged writes lost by the failover');
    assert.notEqual(await postgresChaos.writable(c, 'PG001B'), true, 'the old master takes writes again');
    assert.equal(heal.decisions.filter((x) => x.verdict === 'failover').length, 1, 'one failover');
  });
});
