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

test('method options: a key that is no option, or options that are not an object, are INVALID_ARGUMENT; nothing is written', async () => {
  const f = makeKit();
  try {
    const kit = f.kit;
    const board = await kit.objects.create('board', { n: 1 }, { shard: 1 });
    const pin = await kit.objects.create('pin', { n: 1 }, { near: board.id });
    await kit.mappings.add('board_has_pins', board.id, pin.id, { sequence: 1 });
    const cases: Array<[string, () => Promise<unknown>, RegExp]> = [
      ['create shrd', () => kit.objects.create('board', { n: 2 }, { shrd: 1 } as never), /objects\.create: shrd is not an option \(near, shard\)/],
      ['create null', () => kit.objects.create('board', { n: 2 }, null as never), /objects\.create: options must be an object/],
      ['getMany', () => kit.objects.getMany([board.id], { skipinvalid: true } as never), /skipinvalid is not an option/],
      ['update', () => kit.objects.update(board.id, () => ({ n: 3 }), { if_match: '*' } as never), /if_match is not an option/],
      ['patch', () => kit.objects.patch(board.id, { n: 3 }, { ifmatch: '*' } as never), /ifmatch is not an option/],
      ['delete', () => kit.objects.delete(board.id, { hardly: true } as never), /hardly is not an option/],
      ['add', () => kit.mappings.add('board_has_pins', board.id, pin.id, { seq: 2 } as never), /seq is not an option/],
      ['list curser', () => kit.mappings.list('board_has_pins', board.id, { curser: 'x' } as never), /curser is not an option \(limit, order, cursor\)/],
      ['list string', () => kit.mappings.list('board_has_pins', board.id, 'desc' as never), /options must be an object/],
      ['shardStats', () => kit.shardStats({ frist: 0 } as never), /frist is not an option/],
    ];
    for (const [what, call, message] of cases) {
      await assert.rejects(call(), (err) => isShardKitError(err, 'INVALID_ARGUMENT') && message.test(err.message), what);
    }
    assert.deepEqual((await kit.objects.get(board.id)).data, { n: 1 }, 'nothing changed');
    assert.deepEqual((await kit.mappings.list('board_has_pins', board.id)).items.map((i) => i.sequence), [1]);
    assert.equal((await kit.objects.create('board', { n: 2 }, { shard: 2 })).shard, 2, 'right options still work');
  } finally {
    await f.cleanup();
  }
});
