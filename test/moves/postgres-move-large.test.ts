/**
 * The PostgreSQL side of the operator's grow (issue #28): a service already running, `dev
 * add-pair`, then `shards move` of 64 object shards (640 tables) to the new pair in one command;
 * the service writes to the moved range without a restart and reads back everything written
 * before. No statement of the move grows with the number of tables.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { loadConfigFile } from '../../src/config/config.js';
import { ShardKit } from '../../src/kit/shard-kit.js';
import { DevCluster } from '../../src/ops/dev-cluster.js';
import { startTestCluster } from '../mysql/cluster-fixture.js';
import { cliProcess as cli, ensureBuilt } from '../cli/cli-harness.js';

const SHARDS = 64;

describe('a 64-shard move to a pair added while a service runs (PostgreSQL)', () => {
  let fx: Awaited<ReturnType<typeof startTestCluster>>;
  let dir: string;
  let configPath: string;
  let service: ShardKit;
  before(async () => {
    ensureBuilt();
    fx = await startTestCluster({ engine: 'postgres', pairs: 1, shards: SHARDS, modShards: 4, prefix: 'shardkit-pgmove64-' });
    dir = fx.dir;
    configPath = join(dir, 'shardkit.json');
    service = await ShardKit.open({ config: loadConfigFile(configPath), configPath, dataDir: dir });
  });
  after(async () => {
    await service?.close();
    await fx?.stop();
  });

  test('dev add-pair, shards move 0..63 in one command, the running service writes to the new pair', async () => {
    const before = await service.objects.createMany('pin', Array.from({ length: SHARDS * 3 }, (_, i) => ({ data: { i }, shard: i % SHARDS })));
    const added = await cli(['dev', 'add-pair', '--dir', dir, '--json']);
    assert.equal(added.code, 0, added.stderr);
    const moved = await cli(['shards', 'move', `0..${SHARDS - 1}`, '--to', 'PG002A', '--to-slave', 'PG002B', '--json', '--config', configPath, '--data', dir]);
    assert.equal(moved.code, 0, moved.stderr);
    const last = JSON.parse(moved.stdout.trim().split('\n').at(-1)!) as { outcome?: string; verifiedRows?: number };
    assert.equal(last.outcome, 'switched');
    assert.ok(last.verifiedRows! >= SHARDS * 3, moved.stdout.slice(-500));
    const after = await service.objects.create('pin', { after: 'the move' }, { shard: 5 });
    assert.equal((await service.shardMap()).locate(5).master, 'PG002A');
    assert.deepEqual((await service.objects.get(after.id)).data, { after: 'the move' });
    const read = await service.objects.getMany(before.map((o) => o.id));
    assert.deepEqual(read.map((o) => o?.data), before.map((o) => o.data), 'every object written before the move reads back');
    // After the switch (and writes on the target), verify compares the live copy with its slave: clean, exit 0.
    const verified = await cli(['shards', 'verify', `0..${SHARDS - 1}`, '--json', '--config', configPath, '--data', dir]);
    assert.equal(verified.code, 0, verified.stdout + verified.stderr);
    const v = JSON.parse(verified.stdout) as { compared: number; mismatches: unknown[] };
    assert.deepEqual([v.compared, v.mismatches.length], [SHARDS, 0]);
  });
});
