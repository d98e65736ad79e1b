import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { isShardKitError, type ErrorCode } from '../../src/errors.js';
import { modShard } from '../../src/ids/mod-shard.js';
import { shardDatabaseName } from '../../src/storage/shard-names.js';
import { HOSTILE_STRINGS } from '../conformance/storage-suite.js';
import { makeKit, snapshot } from './kit-fixture.js';

async function expectCode(p: Promise<unknown>, code: ErrorCode): Promise<void> {
  await assert.rejects(p, (err) => {
    assert.ok(isShardKitError(err), `expected ShardKitError ${code}, got ${String(err)}`);
    assert.equal(err.code, code, err.message);
    return true;
  });
}

test('a lookup lives on mod shard md5(key) mod 4096, on that shard\'s host', async () => {
  const f = makeKit();
  try {
    const u = await f.kit.objects.create('user', { name: 'ip owner' });
    await f.kit.lookups.put('ip', '1.2.3.4', u.id);
    assert.equal(modShard('1.2.3.4'), 1537);
    assert.equal(await f.kit.lookups.shardOf('1.2.3.4'), 1537);
    // 4096 mod shards over two pairs: 1537 is on msdb001a.
    assert.ok(existsSync(join(f.root, 'msdb001a', `${shardDatabaseName(1537)}.sqlite`)));
    assert.equal(await f.kit.lookups.get('ip', '1.2.3.4'), u.id);
    assert.equal(await f.kit.lookups.get('email', '1.2.3.4'), undefined);
  } finally {
    await f.cleanup();
  }
});

test('put overwrites, delete reports whether the key existed', async () => {
  const f = makeKit();
  try {
    const a = await f.kit.objects.create('user', {});
    const b = await f.kit.objects.create('user', {});
    await f.kit.lookups.put('email', 'ann@example.com', a.id);
    await f.kit.lookups.put('email', 'ann@example.com', b.id.toString());
    assert.equal(await f.kit.lookups.get('email', 'ann@example.com'), b.id);
    assert.equal(await f.kit.lookups.delete('email', 'ann@example.com'), true);
    assert.equal(await f.kit.lookups.delete('email', 'ann@example.com'), false);
    assert.equal(await f.kit.lookups.get('email', 'ann@example.com'), undefined);
  } finally {
    await f.cleanup();
  }
});

test('hostile keys are exact and distinct, and touch nothing but their own rows', async () => {
  const f = makeKit();
  try {
    const canary = await f.kit.objects.create('user', { canary: true });
    await f.kit.lookups.put('username', 'canary', canary.id);
    const ids = [];
    const keys = [...HOSTILE_STRINGS, '../../../etc/passwd', '..\\..\\x', '/tmp/x', 'db00001.sqlite', '%2e%2e%2f', '*', '?', '.', '..'];
    for (const key of keys) {
      const u = await f.kit.objects.create('user', {});
      ids.push(u.id);
      await f.kit.lookups.put('username', key, u.id);
    }
    for (const [i, key] of keys.entries()) assert.equal(await f.kit.lookups.get('username', key), ids[i], JSON.stringify(key));
    assert.equal(await f.kit.lookups.get('username', 'canary'), canary.id);
    // Keys never become paths: the data dir holds host directories of shard files (and the lock
    // that guards making them, src/storage/sqlite/sqlite-write-fence.ts) and nothing else.
    const files = snapshot(f.root).split('\n').filter((l) => l !== '');
    for (const line of files) assert.match(line.split(' ')[0]!.slice(f.root.length), /^\/[A-Za-z0-9_-]+\/(?:db\d{5}\.sqlite|shardkit-creation-fence\.sqlite)?$/, line);
    assert.equal(existsSync(join(f.root, '..', 'etc')), false);
  } finally {
    await f.cleanup();
  }
});

test('bad keyspaces, keys and ids are refused and write nothing', async () => {
  const f = makeKit();
  try {
    const u = await f.kit.objects.create('user', {});
    const before = snapshot(f.root);
    await expectCode(f.kit.lookups.put('phone', 'k', u.id), 'UNKNOWN_KEYSPACE');
    await expectCode(f.kit.lookups.get('constructor', 'k'), 'UNKNOWN_KEYSPACE');
    for (const key of ['', 'x'.repeat(1025), '\uDC00', 5 as unknown as string]) {
      await expectCode(f.kit.lookups.put('email', key, u.id), 'INVALID_ARGUMENT');
      await expectCode(f.kit.lookups.get('email', key), 'INVALID_ARGUMENT');
      await expectCode(f.kit.lookups.delete('email', key), 'INVALID_ARGUMENT');
    }
    await expectCode(f.kit.lookups.put('email', 'k', 'nope'), 'INVALID_ID');
    await expectCode(f.kit.lookups.put('email', 'k', String(1n << 62n)), 'INVALID_ID');
    assert.equal(snapshot(f.root), before);
  } finally {
    await f.cleanup();
  }
});
