/**
 * SPEC §5, opening new ranges (issue 17 item 5): `topology open --master/--slave` adds shards past
 * the last one, `shardkit init` creates them on their hosts, and a service that is already running
 * places new objects there without a restart.
 */
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultConfig } from '../../src/config/config.js';
import { ShardKit } from '../../src/kit/shard-kit.js';
import { defaultShardMapJson, type ShardMap } from '../../src/topology/shard-map.js';
import { cli, ensureBuilt } from '../cli/cli-harness.js';

before(() => ensureBuilt());

test('topology open adds 16..23, init creates them on their master, a running service places new objects there', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-open-range-'));
  const configPath = join(dir, 'shardkit.json');
  // 16 mod shards instead of 4096: init creates every one of them, and this test is about object shards.
  writeFileSync(configPath, JSON.stringify({ ...defaultConfig({ shards: 16, pairs: 2 }), shardMap: defaultShardMapJson({ shards: 16, pairs: 2, modShards: 16 }) }));
  const service = await ShardKit.open({ configPath, dataDir: dir });
  try {
    const old = await service.objects.create('board', { old: true });
    assert.ok(old.shard < 16);
    const seen = new Promise<ShardMap>((resolve) => {
      const on = (m: ShardMap) => {
        if (m.shardCount === 24 && m.openShardCount === 8) {
          service.events.off('topology', on);
          resolve(m);
        }
      };
      service.events.on('topology', on);
    });
    // Only the new range takes new objects, so every placement below must land on it.
    const close = await cli(['topology', 'close', '0..15', '--file', configPath]);
    assert.equal(close.code, 0, close.stderr);
    const open = await cli(['topology', 'open', '16..23', '--master', 'MySQL002A', '--slave', 'MySQL002B', '--file', configPath]);
    assert.equal(open.code, 0, open.stderr);
    assert.match(open.stdout, /object shards 16\.\.23: \(none\) -> MySQL002A\/MySQL002B open/);
    const init = await cli(['init', '--config', configPath, '--json']);
    assert.equal(init.code, 0, init.stderr);
    for (let s = 16; s <= 23; s++) assert.ok(existsSync(join(dir, 'hosts', 'MySQL002A', `db${String(s).padStart(5, '0')}.sqlite`)), `shard ${s} created by init`);
    await seen;
    const placed = new Set<number>();
    for (let i = 0; i < 40; i++) {
      const obj = await service.objects.create('board', { i });
      assert.ok(obj.shard >= 16 && obj.shard <= 23, `new object on shard ${obj.shard}`);
      placed.add(obj.shard);
      assert.deepEqual((await service.objects.get(obj.id)).data, { i });
    }
    assert.ok(placed.size > 1);
    // The old objects stay where they are, readable and writable.
    await service.objects.patch(old.id, { old: 'still' });
    assert.deepEqual((await service.objects.get(old.id)).data, { old: 'still' });
  } finally {
    await service.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
