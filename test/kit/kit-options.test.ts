/**
 * Issue #33: the kit's options are checked (zod) before anything is opened: a misspelled or
 * mistyped option is INVALID_ARGUMENT naming it, and no file is created. They were ignored
 * (`configpath`, `tracer: 5`, `validators: 5`) or failed deep inside with a Node TypeError
 * (`dataDir: 5`).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { defaultConfig } from '../../src/config/config.js';
import { isShardKitError } from '../../src/errors.js';
import { ShardKit } from '../../src/kit/shard-kit.js';
import { makeKit } from './kit-fixture.js';

test('ShardKit.open: a wrong option is INVALID_ARGUMENT naming it, before any file is made', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sk-open-options-'));
  try {
    const config = defaultConfig({ shards: 8, pairs: 2 });
    const cases: Array<[unknown, RegExp]> = [
      [null, /takes an options object/],
      ['shardkit.json', /takes an options object/],
      [{ config, dataDir: dir, configpath: 'x.json' }, /configpath is not an option/],
      [{ config, dataDir: dir, tracer: 5 }, /tracer must be an OpenTelemetry tracer/],
      [{ config, dataDir: dir, tracer: {} }, /tracer must be an OpenTelemetry tracer/],
      [{ config, dataDir: dir, validators: { user: 5 } }, /validators\.user must be a Standard Schema validator/],
      [{ config, dataDir: 5 }, /dataDir/],
      [{ config, dataDir: dir, random: 0.5 }, /random must be a function/],
      [{ configPath: '' }, /configPath/],
    ];
    for (const [options, message] of cases) {
      await assert.rejects(ShardKit.open(options as never), (err) => {
        assert.ok(isShardKitError(err, 'INVALID_ARGUMENT'), `${JSON.stringify(options)}: ${String(err)}`);
        assert.match(err.message, message);
        return true;
      });
    }
    assert.deepEqual(readdirSync(dir), [], 'nothing created');
    // The same options, right, open a kit.
    const kit = await ShardKit.open({ config, dataDir: dir, validators: { board: z.object({ n: z.number() }) }, random: () => 0.5 });
    await kit.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('new ShardKit: unknown keys and parts of the wrong shape are INVALID_ARGUMENT', async () => {
  const f = makeKit();
  try {
    const parts = { backend: f.kit.backend, schema: f.kit.schema, shardMap: await f.kit.shardMap() };
    assert.throws(() => new ShardKit({ ...parts, tracr: {} } as never), (err) => isShardKitError(err, 'INVALID_ARGUMENT') && /tracr is not an option/.test(err.message));
    assert.throws(() => new ShardKit({ ...parts, backend: {} } as never), (err) => isShardKitError(err, 'INVALID_ARGUMENT') && /backend must be a ShardBackend/.test(err.message));
    assert.throws(() => new ShardKit({ ...parts, shardMap: { version: 1 } } as never), (err) => isShardKitError(err, 'INVALID_ARGUMENT') && /shardMap must be a ShardMap/.test(err.message));
    const kit = new ShardKit(parts);
    await kit.close();
  } finally {
    await f.cleanup();
  }
});
