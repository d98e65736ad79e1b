import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { casMoveState } from '../../src/moves/move-state.js';
import { freezeForFailover } from '../../src/ops/failover/failover-freeze.js';
import { createTopologyStore } from '../../src/topology/index.js';
import { ShardMap, type ShardMapJson } from '../../src/topology/shard-map.js';
import { cli } from '../cli/cli-harness.js';
import { startTestCluster } from '../mysql/cluster-fixture.js';

/** The map as a failover that has frozen its ranges leaves it, and as it is once the record is gone. */
const withoutMoves = (m: ShardMap): ShardMapJson => {
  const json = m.toJSON();
  delete json.moves;
  json.ranges = json.ranges.map(({ frozen: _frozen, ...r }) => r);
  return json;
};

for (const engine of ['mariadb', 'postgres'] as const) {
  const [master, slave] = engine === 'postgres' ? ['PG001A', 'PG001B'] : ['MySQL001A', 'MySQL001B'];
  describe(`backup create while a failover is in progress (real ${engine === 'postgres' ? 'PostgreSQL' : 'MariaDB'} pair)`, () => {
    let fx: Awaited<ReturnType<typeof startTestCluster>>;
    let to: string;
    const edit = async (transition: (m: ShardMap) => ShardMapJson): Promise<ShardMap> => {
      const store = createTopologyStore({ kind: 'file', path: join(fx.dir, 'topology.json') });
      try {
        // A fleet no service has started yet holds only the config's seed: store it, as a service would.
        if ((await store.read()) === undefined) await store.write(ShardMap.fromJSON((JSON.parse(readFileSync(fx.cluster.configPath, 'utf8')) as { shardMap: unknown }).shardMap), 0);
        return await casMoveState(store, transition);
      } finally {
        await store.close();
      }
    };
    before(async () => {
      fx = await startTestCluster({ ...(engine === 'postgres' ? { engine } : {}), pairs: 1, shards: 4, prefix: `shardkit-bk-fo-${engine}-` });
      to = mkdtempSync(join(tmpdir(), `shardkit-bk-fo-${engine}-to-`));
    });
    after(async () => {
      rmSync(to, { recursive: true, force: true });
      await fx?.stop();
    });

    test('refused in one line naming the failover, nothing written; once it is gone the backup completes at the new map version', async () => {
      const frozen = await edit((m) => freezeForFailover(m, master, slave, { holdMs: 60_000 }));
      const r = await cli(['backup', 'create', '--dir', fx.dir, '--to', to]);
      assert.notEqual(r.code, 0, r.stdout);
      assert.match(r.stderr, new RegExp(`PRECONDITION_FAILED: a failover \\(failover-[^,]+, ${master} -> ${slave}, frozen\\) is in progress at map version ${frozen.version}: back up after it finished: nothing written`));
      assert.deepEqual(readdirSync(to), [], 'nothing written');

      const done = await edit(withoutMoves);
      const ok = await cli(['backup', 'create', '--dir', fx.dir, '--to', to, '--json']);
      assert.equal(ok.code, 0, ok.stderr);
      const m = JSON.parse(ok.stdout) as { mapVersion: number; units: Array<{ unit: string; source: string }> };
      assert.equal(m.mapVersion, done.version);
      assert.deepEqual(m.units.map((u) => `${u.unit}<-${u.source}`), [`${master}<-${slave}`]);
      const v = await cli(['backup', 'verify', '--dir', fx.dir, '--from', to, '--json']);
      assert.equal(v.code, 0, v.stderr);
      assert.deepEqual((JSON.parse(v.stdout) as { differing: string[] }).differing, []);
    });
  });
}
