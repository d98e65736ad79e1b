/**
 * The operator's order, end to end, on a MariaDB dev cluster (issue #28), with two services
 * started first and writing the whole time (a ledger of acknowledged writes), following only the
 * documented commands: dev add-pair, shards move of half the host's shards, shards verify, dev up
 * again, shards drop-moved, planned failover, kill -9 of a master then failover --emergency, pair
 * rebuild-slave, pair verify. No service restarts and nothing by hand: every acknowledged write
 * reads back, and every refused write got a retryable (503) code.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfigFile } from '../../src/config/config.js';
import { ShardKit } from '../../src/kit/shard-kit.js';
import { DevCluster } from '../../src/ops/dev-cluster.js';
import { startTestCluster } from '../mysql/cluster-fixture.js';
import { ensureBuilt } from '../cli/cli-harness.js';
import { operatorRuns, underLoad } from './operator-order.js';

describe('the operator\'s order on MariaDB, services running throughout', () => {
  let fx: Awaited<ReturnType<typeof startTestCluster>>;
  const services: ShardKit[] = [];
  before(async () => {
    ensureBuilt();
    fx = await startTestCluster({ pairs: 1, shards: 8, modShards: 8, semiSync: true, prefix: 'shardkit-order-' });
    const configPath = fx.cluster.configPath;
    // As on other machines: each service has its own config file, which `dev add-pair` never edits
    // (one a copy read again on an unknown host, one no file at all). They learn the new pair
    // from the topology store's host records only.
    const ownFile = join(fx.dir, 'service-own-config.json');
    copyFileSync(configPath, ownFile);
    services.push(await ShardKit.open({ config: loadConfigFile(ownFile), configPath: ownFile, dataDir: fx.dir }));
    services.push(await ShardKit.open({ config: loadConfigFile(configPath), dataDir: fx.dir }));
  });
  after(async () => {
    for (const s of services) await s.close();
    await fx?.stop();
  });

  test('grow, verify, clean up, fail over planned and by crash, rebuild, verify: 0 acknowledged writes lost, no non-retryable refusal', async () => {
    const dir = fx.dir;
    const fleet = ['--dir', dir];
    const run = operatorRuns;
    await underLoad(services, [0, 1, 2, 3, 4, 5, 6, 7], async (progressed) => {
      await progressed();
      await run(['dev', 'add-pair', '--dir', dir]);
      assert.ok(!readFileSync(join(dir, 'service-own-config.json'), 'utf8').includes('MySQL002A'), 'the services\' config files stay as they were');
      await run(['shards', 'move', '4..7', '--to', 'MySQL002A', '--to-slave', 'MySQL002B', ...fleet]);
      await progressed();
      const verified = await run(['shards', 'verify', '0..7', '--json', ...fleet]);
      assert.deepEqual((JSON.parse(verified.stdout) as { mismatches: unknown[] }).mismatches, []);
      await run(['dev', 'up', '--dir', dir]);
      await run(['failover', 'MySQL001A', '--dir', dir]);
      await progressed();
      // The move's source pair failed over since the switch: drop-moved drops the old copy on its
      // new master, MySQL001B (before: it went to the recorded source, now read-only, and failed).
      const dropped = JSON.parse((await run(['shards', 'drop-moved', '--json', ...fleet])).stdout) as { dropped: Array<{ files: number }> };
      assert.deepEqual(dropped.dropped.map((d) => d.files), [4]);
      const [left] = await DevCluster.require(dir).instance('MySQL001B').admin<Array<{ n: number }>>("SELECT COUNT(*) AS n FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE '%\\_moved'");
      assert.equal(Number(left!.n), 0);
      await progressed();
      // Semi-sync must not fall back to async on a slow machine while the master is about to die.
      // The cluster as it is now (cluster.json names the added pair).
      const cluster = DevCluster.require(dir);
      await cluster.instance('MySQL002A').admin('SET GLOBAL rpl_semi_sync_master_timeout = 600000');
      await cluster.instance('MySQL002A').kill();
      await run(['failover', 'MySQL002A', '--emergency', '--dir', dir]);
      await progressed();
      await run(['pair', 'rebuild-slave', 'MySQL002B', '--dir', dir]);
      await progressed();
    });
    await run(['pair', 'verify', 'MySQL001B', '--dir', dir]);
    await run(['pair', 'verify', 'MySQL002B', '--dir', dir]);
    const map = await services[1]!.refreshShardMap();
    assert.deepEqual([map.locate(0).master, map.locate(0).slave, map.locate(4).master, map.locate(4).slave], ['MySQL001B', 'MySQL001A', 'MySQL002B', 'MySQL002A']);
  });
});
