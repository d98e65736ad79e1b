/**
 * `shardkit dev up --widecolumn myrocks` (the dev cluster's extension hook): the pairs load
 * MyRocks, the config selects the engine, the wide-column shards exist, and the slave replicates
 * the cells (GTID, row-based binlog) so that it holds what its master holds.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { ShardMap } from '../../src/topology/shard-map.js';
import { openMyrocksEngine } from '../../src/widecolumn/myrocks/myrocks-config.js';
import { myrocksDevExtension } from '../../src/cli/actions/widecolumn-myrocks-dev.js';
import { ShardKitError } from '../../src/errors.js';
import { parseWideColumnConfig } from '../../src/widecolumn/service.js';
import { startTestCluster } from '../mysql/cluster-fixture.js';

describe('dev up --widecolumn myrocks', () => {
  let fx: Awaited<ReturnType<typeof startTestCluster>>;
  before(async () => {
    fx = await startTestCluster({ pairs: 1, shards: 4, modShards: 4, extensions: [myrocksDevExtension()], prefix: 'shardkit-myr-dev-' });
  });
  after(async () => {
    await fx?.stop();
  });

  test('the pairs load MyRocks, the config selects it, the shards exist, and the slave holds the master\'s cells', async () => {
    const config = fx.cluster.config();
    assert.equal(parseWideColumnConfig(config.widecolumn).engine, 'myrocks');
    const master = fx.cluster.instance('MySQL001A');
    const slave = fx.cluster.instance('MySQL001B');
    const engines = await slave.admin<Array<{ SUPPORT: string }>>("SELECT SUPPORT FROM information_schema.ENGINES WHERE ENGINE = 'ROCKSDB'");
    assert.equal(engines[0]?.SUPPORT, 'YES');
    const map = ShardMap.fromJSON(config.shardMap);
    const engine = openMyrocksEngine({ storage: config.storage, hosts: config.hosts, shardMap: () => map }, undefined);
    try {
      await engine.putDataset('events', { maxVersions: 3 });
      const rows = Array.from({ length: 20 }, (_, i) => `u${i}`);
      await engine.batchPutRows('events', rows.map((row) => ({ row, items: [{ column: 'click', value: row, timestamp: 1000 }, { column: 'view', value: row }] })));
      const sum = async (inst: typeof master) => {
        const parts: string[] = [];
        for (let s = 0; s < 4; s++) {
          const [r] = await inst.admin<Array<{ n: string; c: string | null }>>(`SELECT COUNT(*) AS n, SUM(CRC32(CONCAT(HEX(rh), HEX(col), nts, HEX(v)))) AS c FROM \`wc0000${s}\`.events`);
          parts.push(`${r!.n}:${r!.c}`);
        }
        return parts.join(' ');
      };
      const want = await sum(master);
      let got = '';
      // Replication is asynchronous: wait for the slave to catch up (bounded by attempts).
      for (let i = 0; i < 300 && got !== want; i++) {
        try {
          got = await sum(slave);
        } catch {
          got = '';
        }
        if (got !== want) await sleep(100);
      }
      assert.equal(got, want);
      assert.equal(want.split(' ').reduce((n, p) => n + Number(p.split(':')[0]), 0), 80);
    } finally {
      await engine.close();
    }
  });

  test('without the plugin file the extension refuses with MISSING_DEPENDENCY', () => {
    assert.throws(() => myrocksDevExtension('/nonexistent/ha_rocksdb.so'), (err: unknown) => err instanceof ShardKitError && err.code === 'MISSING_DEPENDENCY');
  });
});
