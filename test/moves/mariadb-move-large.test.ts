/**
 * A grow as an operator does it on MariaDB (issue #28), at the seed's scale of one move: a service
 * already running, `dev add-pair` (its master starts read-only), then `shards move` of 64 shards
 * (640 tables) to the new pair in one command. The service writes to the moved range without a
 * restart (it learns the new pair from its config file; the mover left the target writable), and
 * every object written before is read back. The old code failed here three ways: a counting
 * statement over every moving table overran the server's thread stack after the whole dump, the
 * target stayed read-only (SHARD_MOVING), and the service did not know the new host (400).
 */
import { after, before, describe, test } from 'node:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { loadConfigFile } from '../../src/config/config.js';
import { pinterestId } from '../../src/ids/pinterest-id.js';
import { ShardKit } from '../../src/kit/shard-kit.js';
import { startTestCluster } from '../mysql/cluster-fixture.js';
import { cliProcess as cli, ensureBuilt } from '../cli/cli-harness.js';

const SHARDS = 64;

describe('a 64-shard move to a pair added while a service runs (MariaDB)', () => {
  let fx: Awaited<ReturnType<typeof startTestCluster>>;
  let service: ShardKit;
  before(async () => {
    ensureBuilt();
    fx = await startTestCluster({ pairs: 1, shards: SHARDS, modShards: 4, prefix: 'shardkit-mariamove64-' });
    // Opened as `serve --config` opens it, before the fleet grows.
    service = await ShardKit.open({ config: loadConfigFile(fx.cluster.configPath), configPath: fx.cluster.configPath, dataDir: fx.dir });
  });
  after(async () => {
    await service?.close();
    await fx?.stop();
  });

  test('dev add-pair, shards move 0..63 in one command, the running service writes to the new pair', async () => {
    // Values that look like tuple borders and statement ends in the dump: the copy's row count, read off the dump, must skip them.
    const text = "a),(b', \\'),\n(c; \\\\ INSERT INTO `pins` VALUES (1,'x');";
    const before = await service.objects.createMany('pin', Array.from({ length: SHARDS * 3 }, (_, i) => ({ data: { i, text }, shard: i % SHARDS })));
    const added = await cli(['dev', 'add-pair', '--dir', fx.dir, '--json']);
    assert.equal(added.code, 0, added.stderr);
    const args = ['--config', fx.cluster.configPath, '--data', fx.dir];
    const moved = await cli(['shards', 'move', `0..${SHARDS - 1}`, '--to', 'MySQL002A', '--to-slave', 'MySQL002B', '--json', ...args]);
    assert.equal(moved.code, 0, moved.stderr);
    const lines = moved.stdout.trim().split('\n').map((l) => JSON.parse(l) as { outcome?: string; verifiedRows?: number; rowsCopied?: number });
    assert.equal(lines.at(-1)!.outcome, 'switched');
    assert.ok(lines.at(-1)!.verifiedRows! >= SHARDS * 3, moved.stdout.slice(-500));
    assert.equal(lines.filter((l) => l.rowsCopied !== undefined).at(-1)?.rowsCopied, SHARDS * 3, 'the rows copied, exactly');

    const after = await service.objects.create('pin', { after: 'the move' }, { shard: 5 });
    assert.equal((await service.shardMap()).locate(5).master, 'MySQL002A');
    assert.deepEqual((await service.objects.get(after.id)).data, { after: 'the move' });
    const read = await service.objects.getMany(before.map((o) => o.id));
    assert.deepEqual(read.map((o) => o?.data), before.map((o) => o.data), 'every object written before the move reads back');
    // After the switch (and writes on the target), verify compares the live copy with its slave: clean, exit 0.
    const verified = await cli(['shards', 'verify', `0..${SHARDS - 1}`, '--json', '--config', fx.cluster.configPath, '--data', fx.dir]);
    assert.equal(verified.code, 0, verified.stdout + verified.stderr);
    const v = JSON.parse(verified.stdout) as { compared: number; mismatches: unknown[] };
    assert.deepEqual([v.compared, v.mismatches.length], [SHARDS, 0]);
    assert.equal(pinterestId.decode(after.id).shard, 5);
  });
  test('without admin access a read-only target is refused up front, in one line naming both ways to give access; nothing changes', async () => {
    const added = await cli(['dev', 'add-pair', '--dir', fx.dir, '--json']);
    assert.equal(added.code, 0, added.stderr);
    const empty = mkdtempSync(join(tmpdir(), 'shardkit-noadmin-'));
    try {
      const res = await cli(['shards', 'move', '60..63', '--to', 'MySQL003A', '--config', fx.cluster.configPath, '--data', empty]);
      assert.notEqual(res.code, 0);
      assert.match(res.stderr, /MySQL003A is read-only and this mover has no admin access/);
      assert.match(res.stderr, /--dir/);
      assert.match(res.stderr, /SHARDKIT_ADMIN_USER/);
      assert.equal(res.stderr.trim().split('\n').length, 1, res.stderr);
      const map = await service.refreshShardMap();
      assert.equal(map.locate(60).master, 'MySQL002A');
      assert.deepEqual(map.moves().filter((m) => m.range[0] <= 63 && m.range[1] >= 60 && m.phase !== 'switched'), []);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});
