/**
 * `shards verify` of a master against a slave that is still applying what the master did (a slave
 * rebuilt or back from a crash under load: chaos seed 1033). A table the master created that the
 * slave has not applied yet is no difference: verify compares once the slave caught up.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { ShardKit } from '../../src/kit/shard-kit.js';
import { startTestCluster } from '../mysql/cluster-fixture.js';
import { cliProcess, ensureBuilt } from '../cli/cli-harness.js';

let fx: Awaited<ReturnType<typeof startTestCluster>>;
before(async () => {
  ensureBuilt();
  fx = await startTestCluster({ pairs: 1, shards: 2, modShards: 2, prefix: 'shardkit-verify-lag-' });
});
after(async () => {
  await fx?.stop();
});

test('shards verify waits for a lagging slave to apply a table the master created, then reports clean', async () => {
  const master = fx.cluster.instance('MySQL001A');
  const slave = fx.cluster.instance('MySQL001B');
  const kit = await ShardKit.open({ configPath: fx.cluster.configPath, dataDir: fx.dir });
  try {
    for (let i = 0; i < 3; i++) await kit.objects.create('pin', { i }, { shard: 1 });
  } finally {
    await kit.close();
  }
  // Both sides without db00001.pins, then the master alone creates it again with its rows while
  // the slave's SQL thread is stopped: the slave has it in its relay log, not in its catalogue.
  await master.admin('CREATE TABLE db00000.keep_pins LIKE db00001.pins', 'INSERT INTO db00000.keep_pins SELECT * FROM db00001.pins', 'DROP TABLE db00001.pins');
  const [pos] = await master.admin<Array<{ p: string }>>('SELECT @@GLOBAL.gtid_binlog_pos AS p');
  const [caught] = await slave.admin<Array<{ r: number | string }>>({ sql: 'SELECT MASTER_GTID_WAIT(?, 60) AS r', values: [pos!.p] });
  assert.equal(Number(caught!.r), 0);
  await slave.admin('STOP SLAVE SQL_THREAD');
  await master.admin('CREATE TABLE db00001.pins LIKE db00000.keep_pins', 'INSERT INTO db00001.pins SELECT * FROM db00000.keep_pins', 'DROP TABLE db00000.keep_pins');
  const verify = cliProcess(['shards', 'verify', '1..1', '--dir', fx.dir, '--json']);
  // The slave resumes once verify waits on it for the master's position: a table list read before
  // that wait is stale. (A condition, not a delay: the wait shows in the slave's process list.)
  for (;;) {
    const [waiting] = await slave.admin<Array<{ n: number | string }>>("SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE INFO LIKE 'SELECT MASTER_GTID_WAIT%' AND ID <> CONNECTION_ID()");
    if (Number(waiting!.n) > 0) break;
    await sleep(50);
  }
  await slave.admin('START SLAVE SQL_THREAD');
  const r = await verify;
  assert.equal(r.code, 0, `verify: ${r.stdout}${r.stderr}`);
  const report = JSON.parse(r.stdout) as { mismatches: unknown[]; rows: number };
  assert.deepEqual(report.mismatches, []);
  assert.ok(report.rows >= 3, `the pins were compared: ${r.stdout}`);
});
