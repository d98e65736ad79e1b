/**
 * The operator's order, end to end, on a PostgreSQL dev cluster with synchronous standbys (issue
 * #28): two services started first and writing the whole time (a ledger), then dev add-pair,
 * shards move of half the host's shards, shards verify, dev up again, shards drop-moved, planned
 * failover, kill -9 of a master then failover --emergency, pair rebuild-slave, shards verify. No
 * restarts, nothing by hand: every acknowledged write reads back, every refusal is retryable.
 * (`pair verify` is MariaDB only: shards verify compares each master with its standby here.)
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfigFile } from '../../src/config/config.js';
import { ShardKit } from '../../src/kit/shard-kit.js';
import { DevCluster } from '../../src/ops/dev-cluster.js';
import { startTestCluster } from '../mysql/cluster-fixture.js';
import { pgServer } from '../../src/ops/dev/dev-postgres.js';
import { ensureBuilt } from '../cli/cli-harness.js';
import { operatorRuns, underLoad } from './operator-order.js';

describe('the operator\'s order on PostgreSQL (--sync), services running throughout', () => {
  let fx: Awaited<ReturnType<typeof startTestCluster>>;
  let dir: string;
  let configPath: string;
  const services: ShardKit[] = [];
  before(async () => {
    ensureBuilt();
    fx = await startTestCluster({ engine: 'postgres', pairs: 1, shards: 8, modShards: 8, semiSync: true, prefix: 'shardkit-pgorder-' });
    dir = fx.dir;
    configPath = join(dir, 'shardkit.json');
    // As on other machines: each service has its own config file, which `dev add-pair` never edits
    // (one a copy read again on an unknown host, one no file at all). They learn the new pair
    // from the topology store's host records only.
    const ownFile = join(dir, 'service-own-config.json');
    copyFileSync(configPath, ownFile);
    services.push(await ShardKit.open({ config: loadConfigFile(ownFile), configPath: ownFile, dataDir: dir }));
    services.push(await ShardKit.open({ config: loadConfigFile(configPath), dataDir: dir }));
  });
  after(async () => {
    for (const s of services) await s.close();
    await fx?.stop();
  });

  test('grow, verify, clean up, fail over planned and by crash, rebuild, verify: 0 acknowledged writes lost, no non-retryable refusal', async () => {
    const fleet = ['--dir', dir];
    const run = operatorRuns;
    const clean = async () => {
      const v = await run(['shards', 'verify', '0..7', '--json', ...fleet]);
      assert.deepEqual((JSON.parse(v.stdout) as { mismatches: unknown[] }).mismatches, []);
    };
    await underLoad(services, [0, 1, 2, 3, 4, 5, 6, 7], async (progressed) => {
      await progressed();
      await run(['dev', 'add-pair', '--dir', dir]);
      assert.ok(!readFileSync(join(dir, 'service-own-config.json'), 'utf8').includes('PG002A'), 'the services\' config files stay as they were');
      await run(['shards', 'move', '4..7', '--to', 'PG002A', '--to-slave', 'PG002B', ...fleet]);
      await progressed();
      await clean();
      await run(['dev', 'up', '--dir', dir]);
      await run(['failover', 'PG001A', '--dir', dir]);
      await progressed();
      // The move's source pair failed over since the switch: drop-moved drops the old copy on its
      // new master, PG001B (before: it went to the recorded source, now read-only, and failed).
      const dropped = JSON.parse((await run(['shards', 'drop-moved', '--json', ...fleet])).stdout) as { dropped: Array<{ files: number }> };
      assert.ok(dropped.dropped.length > 0 && dropped.dropped.every((d) => d.files > 0), JSON.stringify(dropped));
      const [left] = await pgServer(DevCluster.require(dir), 'PG001B').sql<{ n: number }>("SELECT count(*)::int AS n FROM pg_namespace WHERE nspname LIKE '%\\_moved'", [], 'shardkit');
      assert.equal(left!.n, 0);
      await progressed();
      // Only the postmaster, as a crash of it: backends left running cannot acknowledge a commit
      // the synchronous standby did not flush.
      process.kill(pgServer(DevCluster.require(dir), 'PG002A').pid!, 'SIGKILL');
      await run(['failover', 'PG002A', '--emergency', '--dir', dir]);
      await progressed();
      await run(['pair', 'rebuild-slave', 'PG002B', '--dir', dir]);
      await progressed();
    });
    await clean();
    const map = await services[1]!.refreshShardMap();
    assert.deepEqual([map.locate(0).master, map.locate(0).slave, map.locate(4).master, map.locate(4).slave], ['PG001B', 'PG001A', 'PG002B', 'PG002A']);
  });
});
