/**
 * The embedded default names its hosts for what they are (local001, not MySQL001A) in a new data
 * directory; a data directory written with the old names keeps them and its data.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureConfig } from '../../src/cli/actions/serve.js';
import { defaultConfig } from '../../src/config/config.js';
import { ShardKit } from '../../src/kit/shard-kit.js';

test('a new data dir gets local001…local008 and lookup001…; no MySQL host names', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-names-'));
  try {
    const { config } = ensureConfig(dir, undefined);
    const text = readFileSync(join(dir, 'shardkit.json'), 'utf8');
    assert.doesNotMatch(text, /MySQL|msdb/);
    const kit = await ShardKit.open({ config, dataDir: dir });
    try {
      const map = await kit.shardMap();
      assert.deepEqual(map.toJSON().ranges.map((r) => [r.master, r.slave]).slice(0, 2), [['local001', 'local001-standby'], ['local002', 'local002-standby']]);
      assert.equal(map.toJSON().modShards.ranges[0]!.master, 'lookup001');
      const obj = await kit.objects.create('user', { name: 'new' });
      assert.deepEqual((await kit.objects.get(obj.id)).data, { name: 'new' });
    } finally {
      await kit.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a data dir with an old-style config (MySQL001A…) keeps its host names and its data', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-names-'));
  try {
    // What serve wrote before the change: the seed's names.
    writeFileSync(join(dir, 'shardkit.json'), `${JSON.stringify(defaultConfig(), null, 2)}\n`);
    const first = ensureConfig(dir, undefined).config;
    let kit = await ShardKit.open({ config: first, dataDir: dir });
    const obj = await kit.objects.create('pin', { name: 'old' });
    await kit.lookups.put('email', 'old@example.com', obj.id);
    await kit.close();
    // Started again (by the new code): the same config, names and data.
    const again = ensureConfig(dir, undefined).config;
    assert.match(readFileSync(join(dir, 'shardkit.json'), 'utf8'), /MySQL001A/);
    kit = await ShardKit.open({ config: again, dataDir: dir });
    try {
      assert.equal((await kit.shardMap()).toJSON().ranges[0]!.master, 'MySQL001A');
      assert.deepEqual((await kit.objects.get(obj.id)).data, { name: 'old' });
      assert.equal(await kit.lookups.get('email', 'old@example.com'), obj.id);
    } finally {
      await kit.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
