/**
 * `shardkit dev up --widecolumn myrocks` (the dev cluster's extension hook): the pairs load
 * MyRocks, the config selects the engine, the wide-column shards exist, and the slave replicates
 * the cells (GTID, row-based binlog) so that it holds what its master holds.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ShardMap } from '../../src/topology/shard-map.js';
import { openMyrocksEngine } from '../../src/widecolumn/myrocks/myrocks-config.js';
import { myrocksDevExtension } from '../../src/cli/actions/widecolumn-myrocks-dev.js';
import { ShardKitError } from '../../src/errors.js';
import { parseWideColumnConfig } from '../../src/widecolumn/service.js';
import { startTestCluster } from '../mysql/cluster-fixture.js';

type Instance = ReturnType<Awaited<ReturnType<typeof startTestCluster>>['cluster']['instance']>;

/** Waits until the slave has applied everything the master logged (MASTER_GTID_WAIT, bounded). */
async function waitForSlave(master: Instance, slave: Instance): Promise<void> {
  const [pos] = await master.admin<Array<{ p: string }>>('SELECT @@gtid_binlog_pos AS p');
  const [r] = await slave.admin<Array<{ w: number | string }>>({ sql: 'SELECT MASTER_GTID_WAIT(?, 120) AS w', values: [pos!.p] });
  assert.equal(Number(r!.w), 0, `the slave did not reach the master's position ${pos!.p}`);
}

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

  test('backup reads each host from the slave the map names (one snapshot), and restores what the slave held', async () => {
    const config = fx.cluster.config();
    const master = fx.cluster.instance('MySQL001A');
    const slave = fx.cluster.instance('MySQL001B');
    const map = ShardMap.fromJSON(config.shardMap);
    const dir = mkdtempSync(join(tmpdir(), 'shardkit-myr-slave-bk-'));
    let engine = openMyrocksEngine({ storage: config.storage, hosts: config.hosts, shardMap: () => map }, undefined);
    let stopped = false;
    try {
      await engine.putDataset('audit', { maxVersions: 5 });
      const rows = Array.from({ length: 12 }, (_, i) => `a${i}`);
      await engine.batchPutRows('audit', rows.map((row) => ({ row, items: [{ column: 'v', value: `${row}-old`, timestamp: 1000 }] })));
      await waitForSlave(master, slave);
      // The slave stops applying: a cell written now is on the master only, so a backup that holds
      // it was not read from the slave.
      await slave.admin('STOP ALL SLAVES');
      stopped = true;
      await engine.batchPutRows('audit', rows.map((row) => ({ row, items: [{ column: 'v', value: `${row}-new`, timestamp: 2000 }] })));
      const onMaster = await engine.batchGetRows('audit', rows.map((row) => ({ row, versions: 5 })));
      assert.ok(onMaster.every((r) => r.columns[0]!.cells.some((c) => c.timestamp === 2000)), 'the master holds the new cells');

      const report = await engine.backup(join(dir, 'bk'));
      const manifest = JSON.parse(readFileSync(join(dir, 'bk', 'manifest.json'), 'utf8')) as { hosts: Record<string, { shards: number[] }> };
      assert.deepEqual(Object.keys(manifest.hosts), ['MySQL001B']);
      assert.deepEqual(manifest.hosts.MySQL001B!.shards, [0, 1, 2, 3]);
      assert.ok(report.records > 0);

      // Restore into the emptied fleet: every row has its old cell and not the one the slave never got.
      await slave.admin('START ALL SLAVES');
      stopped = false;
      await engine.close();
      for (let s = 0; s < 4; s++) await master.admin(`DROP TABLE IF EXISTS \`wc0000${s}\`.audit, \`wc0000${s}\`.events`);
      await master.admin('DELETE FROM `wc00000`.`_catalog`');
      engine = openMyrocksEngine({ storage: config.storage, hosts: config.hosts, shardMap: () => map }, undefined);
      const restored = await engine.restore(join(dir, 'bk'));
      assert.equal(restored.records, report.records);
      const after = await engine.batchGetRows('audit', rows.map((row) => ({ row, versions: 5 })));
      assert.deepEqual(after.map((r) => r.columns.flatMap((col) => col.cells.map((c) => [col.column, c.timestamp, c.value.toString()]))), rows.map((row) => [['v', 1000, `${row}-old`]]));
      await waitForSlave(master, slave);
    } finally {
      if (stopped) await slave.admin('START ALL SLAVES').catch(() => undefined);
      await engine.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('without the plugin file the extension refuses with MISSING_DEPENDENCY', () => {
    assert.throws(() => myrocksDevExtension('/nonexistent/ha_rocksdb.so'), (err: unknown) => err instanceof ShardKitError && err.code === 'MISSING_DEPENDENCY');
  });
});
