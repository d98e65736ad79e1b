/**
 * `shardkit heal` against a real MariaDB dev cluster (1 pair, semi-sync), run as operators run it:
 * a child process beside two services writing with a ledger of acknowledged writes.
 * - observe mode: kill -9 of the master is reported with the command to run; nothing changes;
 * - act mode: kill -9 of the master under the load is failed over by itself, the services write
 *   to the new master without a restart, and 0 acknowledged writes are lost; a second act-mode
 *   supervisor refuses to start while the first runs.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ShardKit } from '../../src/kit/shard-kit.js';
import { devUp } from '../../src/ops/dev-cluster.js';
import { startTestCluster } from '../mysql/cluster-fixture.js';
import { cliProcess, ensureBuilt } from '../cli/cli-harness.js';
import { startHeal } from './heal-process.js';
import { ackedAfter, missingOn, newLedger, writeLoad } from './ledger.js';

type Fixture = Awaited<ReturnType<typeof startTestCluster>>;

describe('shardkit heal on a MariaDB dev cluster (semi-sync)', () => {
  let fx: Fixture;
  const kits: ShardKit[] = [];
  before(async () => {
    ensureBuilt();
    fx = await startTestCluster({ pairs: 1, shards: 2, modShards: 2, semiSync: true, prefix: 'shardkit-heal-' });
    for (let i = 0; i < 2; i++) kits.push(await ShardKit.open({ configPath: fx.cluster.configPath, dataDir: fx.dir }));
  });
  after(async () => {
    for (const k of kits) await k.close();
    await fx?.stop();
  });

  test('observe mode: a killed master is reported with the command to run, and nothing changes', async () => {
    const heal = startHeal(['--dir', fx.dir, '--interval-ms', '200', '--dead-after', '2']);
    try {
      await fx.cluster.instance('MySQL001A').kill();
      const d = await heal.next((x) => x.verdict === 'recommend');
      assert.equal(d.command, 'shardkit failover MySQL001A --emergency');
      assert.equal((await kits[0]!.shardMap()).locate(0).master, 'MySQL001A', 'the map is unchanged');
    } finally {
      await heal.stop();
    }
    // Back up: the slave reconnects on its own.
    await devUp({ dir: fx.dir, skipInit: true });
  });

  test('act mode: kill -9 of the master under two services is failed over by itself; 0 acknowledged writes lost; one acting supervisor at a time', async () => {
    // Semi-sync must not fall back to async while the machine is slow (see emergency-failover.test.ts).
    await fx.cluster.instance('MySQL001A').admin('SET GLOBAL rpl_semi_sync_master_timeout = 600000');
    const heal = startHeal(['--dir', fx.dir, '--mode', 'act', '--interval-ms', '200', '--dead-after', '3']);
    let release!: () => void;
    const live = newLedger();
    const running = writeLoad(kits, [0, 1], new Promise<void>((r) => (release = r)), 2, live);
    try {
      await heal.ready;
      const second = await cliProcess(['heal', '--dir', fx.dir, '--mode', 'act']);
      assert.equal(second.code, 2, second.stderr);
      assert.match(second.stderr, /another shardkit heal \(pid \d+\) holds/);
      await ackedAfter(live, Date.now());
      await fx.cluster.instance('MySQL001A').kill();
      const killedAt = Date.now();
      const d = await heal.next((x) => x.verdict === 'failover');
      assert.equal(d.error, undefined, d.error);
      assert.equal(d.failover?.newMaster, 'MySQL001B');
      await ackedAfter(live, killedAt);
    } finally {
      release();
      await heal.stop();
    }
    const ledger = await running;
    assert.deepEqual(await missingOn(fx.cluster, 'MySQL001B', ledger.acked), [], 'acknowledged writes lost');
    assert.equal(heal.decisions.filter((x) => x.verdict === 'failover').length, 1, 'one failover');
  });
});
