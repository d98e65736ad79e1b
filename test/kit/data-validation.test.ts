import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { defaultConfig } from '../../src/config/config.js';
import { isShardKitError } from '../../src/errors.js';
import { buildApp } from '../../src/http/app.js';
import { ShardKit } from '../../src/kit/shard-kit.js';

/** The default config with a JSON Schema for users' data. */
function configWithUserSchema() {
  const config = defaultConfig();
  const user = config.schema!.types!.find((t) => t.name === 'user')!;
  Object.assign(user, { dataSchema: { type: 'object', properties: { username: { type: 'string', minLength: 1 }, age: { type: 'integer', minimum: 0 } }, required: ['username'] } });
  return config;
}

const invalid = (field: string) => (err: unknown) => isShardKitError(err, 'INVALID_ARGUMENT') && err.message.includes(field);

test('data schemas: a JSON Schema from the config and a zod validator are checked on create, createMany, update and patch; a refused write changes nothing', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-validate-'));
  const kit = await ShardKit.open({ config: configWithUserSchema(), dataDir: dir, validators: { board: z.object({ name: z.string().max(20) }) } });
  try {
    const ann = await kit.objects.create('user', { username: 'ann', age: 30 });
    await assert.rejects(kit.objects.create('user', { age: 3 }), invalid("must have required property 'username'"));
    await assert.rejects(kit.objects.create('user', { username: 'bob', age: -1 }), invalid('/age'));
    await assert.rejects(kit.objects.patch(ann.id, { age: 'old' }), invalid('/age'));
    await assert.rejects(kit.objects.update(ann.id, (d) => ({ ...d, username: '' })), invalid('/username'));
    assert.deepEqual((await kit.objects.get(ann.id)).data, { username: 'ann', age: 30 }, 'the refused patch and update changed nothing');
    assert.deepEqual((await kit.objects.patch(ann.id, { age: 31 })).data, { username: 'ann', age: 31 });

    await kit.objects.create('board', { name: 'Bread' });
    await assert.rejects(kit.objects.create('board', { name: 'x'.repeat(21) }), invalid('/name'));
    await assert.rejects(kit.objects.createMany('board', [{ data: { name: 'ok' }, shard: 9 }, { data: { name: 7 } as never, shard: 9 }]), invalid('items[1].data'));
    const page = await kit.objects.getMany([]);
    assert.deepEqual(page, []);
    // Types without a schema take any JSON object, as before.
    await kit.objects.create('pin', { anything: [1, { deep: true }] });
    assert.throws(() => new ShardKit({ backend: kit.backend, schema: kit.schema, shardMap: undefined as never, validators: { nope: z.object({}) } }), (err) => isShardKitError(err, 'INVALID_ARGUMENT') && /nope/.test(err.message));
  } finally {
    await kit.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('over HTTP a bad field is 400 INVALID_ARGUMENT naming its path; a bad dataSchema in the config is INVALID_CONFIG', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-validate-http-'));
  const kit = await ShardKit.open({ config: configWithUserSchema(), dataDir: dir });
  const app = await buildApp({ kit });
  try {
    const bad = await app.inject({ method: 'POST', url: '/v1/objects/user', payload: { data: { username: 'ann', age: 1.5 } } });
    assert.equal(bad.statusCode, 400, bad.body);
    const err = (bad.json() as { error: { code: string; message: string } }).error;
    assert.equal(err.code, 'INVALID_ARGUMENT');
    assert.match(err.message, /data of user is not valid: \/age: must be integer/);
    const ok = await app.inject({ method: 'POST', url: '/v1/objects/user', payload: { data: { username: 'ann', age: 1 } } });
    assert.equal(ok.statusCode, 201, ok.body);
  } finally {
    await app.close();
    await kit.close();
  }
  const config = defaultConfig();
  Object.assign(config.schema!.types!.find((t) => t.name === 'user')!, { dataSchema: { type: 'no-such-type' } });
  await assert.rejects(ShardKit.open({ config, dataDir: dir }), (e) => isShardKitError(e, 'INVALID_CONFIG') && /dataSchema/.test(e.message));
  rmSync(dir, { recursive: true, force: true });
});
