/**
 * Opening capacity on a running server fleet (issue #30 item 4), on MariaDB and PostgreSQL dev
 * clusters: a service is already running; `topology open` adds 256 shards past the last one,
 * `shardkit init` creates them on their master (idempotent: a second run creates none), and the
 * running service places new objects there without a restart.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ShardKit } from '../../src/kit/shard-kit.js';
import type { ShardMap } from '../../src/topology/shard-map.js';
import { startTestCluster } from '../mysql/cluster-fixture.js';
import { cli, ensureBuilt } from '../cli/cli-harness.js';

const NEW = 256;

for (const engine of ['mariadb', 'postgres'] as const) {
  describe(`topology open + init on a running ${engine} fleet`, () => {
    let fx: Awaited<ReturnType<typeof startTestCluster>>;
    let service: ShardKit;
    before(async () => {
      ensureBuilt();
      fx = await startTestCluster({ engine, pairs: 1, shards: 8, modShards: 8, prefix: `shardkit-open-${engine}-` });
      service = await ShardKit.open({ configPath: fx.cluster.configPath, dataDir: fx.dir });
    });
    after(async () => {
      await service?.close();
      await fx?.stop();
    });

    test(`${NEW} new shards: created in parallel by init, idempotent, used by the running service at once`, async () => {
      const [master, slave] = engine === 'postgres' ? ['PG001A', 'PG001B'] : ['MySQL001A', 'MySQL001B'];
      const old = await service.objects.create('board', { old: true });
      const seen = new Promise<ShardMap>((resolve) => {
        const on = (m: ShardMap) => {
          if (m.shardCount === 8 + NEW) {
            service.events.off('topology', on);
            resolve(m);
          }
        };
        service.events.on('topology', on);
      });
      const where = ['--file', fx.cluster.configPath, '--data', fx.dir];
      assert.equal((await cli(['topology', 'close', '0..7', ...where])).code, 0);
      const open = await cli(['topology', 'open', `8..${8 + NEW - 1}`, '--master', master, '--slave', slave, ...where]);
      assert.equal(open.code, 0, open.stderr);
      const init = await cli(['init', '--config', fx.cluster.configPath, '--json', '--concurrency', '8']);
      assert.equal(init.code, 0, init.stderr);
      assert.equal((JSON.parse(init.stdout) as { created: number }).created, NEW);
      const again = await cli(['init', '--config', fx.cluster.configPath, '--json']);
      assert.equal(again.code, 0, again.stderr);
      assert.equal((JSON.parse(again.stdout) as { created: number }).created, 0, 'a second init changes nothing');
      await seen;
      const placed = new Set<number>();
      for (let i = 0; i < 40; i++) {
        const obj = await service.objects.create('board', { i });
        assert.ok(obj.shard >= 8 && obj.shard < 8 + NEW, `new object on shard ${obj.shard}`);
        placed.add(obj.shard);
        assert.deepEqual((await service.objects.get(obj.id)).data, { i });
      }
      assert.ok(placed.size > 1);
      await service.objects.patch(old.id, { old: 'still' });
      assert.deepEqual((await service.objects.get(old.id)).data, { old: 'still' });
    });
  });
}
