import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { DevCluster } from '../../src/ops/dev-cluster.js';
import { startTestCluster } from '../mysql/cluster-fixture.js';
import { shardkit } from '../mysql/helpers.js';
import { ackedAfter, missingOn, newLedger, percentile } from './ledger.js';
import { httpWriteLoad, startService, type Service } from './serve-fixture.js';

describe('planned failover under load through two shardkit serve processes (real mariadbd)', () => {
  let fx: Awaited<ReturnType<typeof startTestCluster>>;
  let services: Service[] = [];
  before(async () => {
    fx = await startTestCluster({ pairs: 1, shards: 2, modShards: 2, prefix: 'shardkit-prs-' });
    services = await Promise.all([0, 1].map(() => startService(fx.cluster.configPath, fx.dir)));
  });
  after(async () => {
    await Promise.all(services.map((s) => s.stop()));
    await fx?.stop();
  });

  test('0 acknowledged writes lost, later writes go to the new master, the old master is its slave', async (t) => {
    let release!: () => void;
    const live = newLedger();
    const running = httpWriteLoad(services, [0, 1], new Promise<void>((r) => (release = r)), 2, live);
    await sleep(800);
    const res = await shardkit(['failover', 'MySQL001A', '--dir', fx.dir, '--json']);
    const switchedAt = Date.now();
    try {
      if (res.code === 0) await ackedAfter(live, switchedAt);
      await sleep(200);
    } finally {
      release();
    }
    const ledger = await running;
    assert.equal(res.code, 0, res.stderr);
    const r = JSON.parse(res.stdout) as { newMaster: string; oldMasterIsSlave: boolean; writePauseMs: number; mapVersion: number };
    assert.equal(r.newMaster, 'MySQL001B');
    assert.equal(r.oldMasterIsSlave, true);

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
    t.diagnostic(`${ledger.acked.length} acknowledged, 0 lost; fence-to-writable ${r.writePauseMs} ms; client pauses p50 ${percentile(ledger.pauses, 50)} ms, p99 ${percentile(ledger.pauses, 99)} ms, max ${Math.max(0, ...ledger.pauses)} ms over ${ledger.pauses.length} pauses; errors ${JSON.stringify([...ledger.errors])}`);
  });
});
