/**
 * The "zombie master" (Patroni #3194, Orchestrator's frozen primary): a master that is only frozen
 * (SIGSTOP) when the emergency failover runs must never write again. Without a fence it wakes up
 * still writable, a commit it held for its semi-sync slave times out, is acknowledged to the
 * service, and is lost: the map already names the slave master. The failover shoots it first
 * (src/ops/failover/stonith.ts); on a dev cluster that is kill -9 of its process.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ShardKit } from '../../src/kit/shard-kit.js';
import { devUp } from '../../src/ops/dev-cluster.js';
import { startTestCluster } from '../mysql/cluster-fixture.js';
import { shardkit } from '../mysql/helpers.js';
import { ackedAfter, missingOn, newLedger, writeLoad } from './ledger.js';

describe('failover --emergency of a frozen (SIGSTOP) master, semi-sync with its 2 s fallback (real mariadbd)', () => {
  let fx: Awaited<ReturnType<typeof startTestCluster>>;
  let kits: ShardKit[] = [];
  before(async () => {
    fx = await startTestCluster({ pairs: 1, shards: 2, modShards: 2, semiSync: true, prefix: 'shardkit-zombie-' });
    kits = await Promise.all([0, 1].map(() => ShardKit.open({ configPath: fx.cluster.configPath, dataDir: fx.dir })));
  });
  after(async () => {
    const pid = fx?.cluster.instance('MySQL001A').pid;
    if (pid !== undefined) try { process.kill(pid, 'SIGCONT'); } catch { /* gone */ }
    await Promise.all(kits.map((k) => k.close()));
    await fx?.stop();
  });

  test('the frozen master is killed before its slave is promoted: it never wakes up writable, 0 acknowledged writes lost', async () => {
    const old = fx.cluster.instance('MySQL001A');
    let release!: () => void;
    const live = newLedger();
    const running = writeLoad(kits, [0, 1], new Promise<void>((r) => (release = r)), 2, live);
    let result: Record<string, unknown>;
    try {
      await ackedAfter(live, Date.now());
      const pid = old.pid!;
      process.kill(pid, 'SIGSTOP');
      const res = await shardkit(['failover', 'MySQL001A', '--emergency', '--dir', fx.dir, '--json']);
      // Wake it: a zombie would now finish the commits it held and acknowledge them.
      try { process.kill(pid, 'SIGCONT'); } catch { /* killed by the failover */ }
      assert.equal(res.code, 0, res.stderr);
      result = JSON.parse(res.stdout) as Record<string, unknown>;
      await ackedAfter(live, Date.now());
    } finally {
      release();
    }
    const ledger = await running;
    assert.equal(result.newMaster, 'MySQL001B');
    assert.equal(result.oldMasterShot, 'killed');
    assert.equal(old.isRunning(), false, 'the old master process is gone');
    assert.deepEqual(await missingOn(fx.cluster, 'MySQL001B', ledger.acked), [], 'acknowledged writes lost');
  });

  test('an old master that answers the fence: a commit it holds for its semi-sync slave is cut, never acknowledged, and rebuild-slave does not wait behind it', async () => {
    await devUp({ dir: fx.dir, skipInit: true });
    const back = await shardkit(['pair', 'rebuild-slave', 'MySQL001B', '--dir', fx.dir, '--json']);
    assert.equal(back.code, 0, back.stderr);
    const master = fx.cluster.instance('MySQL001B');
    // The ack can never come (the slave stops fetching), and the master waits for it up to 60 s.
    await master.admin('SET GLOBAL rpl_semi_sync_master_timeout = 60000', 'SET GLOBAL rpl_semi_sync_master_enabled = 1');
    await fx.cluster.instance('MySQL001A').admin('STOP SLAVE IO_THREAD');
    const conn = await master.connect();
    const outcome = conn.query("INSERT INTO db00000.pins (data) VALUES ('{\"held\":1}')").then(() => 'acknowledged', (err: { code?: string }) => `cut (${err.code})`);
    for (;;) {
      const rows = await master.admin<Array<{ n: number }>>("SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE STATE LIKE '%semi-sync%'");
      if (Number(rows[0]!.n) > 0) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const res = await shardkit(['failover', 'MySQL001B', '--emergency', '--dir', fx.dir, '--json']);
    assert.equal(res.code, 0, res.stderr);
    const result = JSON.parse(res.stdout) as { newMaster: string; oldMasterFenced: boolean };
    assert.equal(result.newMaster, 'MySQL001A');
    assert.equal(result.oldMasterFenced, true);
    assert.match(await outcome, /^cut/, 'the held commit was acknowledged by the fenced old master');
    conn.destroy();
    const rebuilt = await shardkit(['pair', 'rebuild-slave', 'MySQL001A', '--dir', fx.dir, '--json']);
    assert.equal(rebuilt.code, 0, rebuilt.stderr);
  });
});
