/**
 * ShardCopy on the embedded engine (the migrator's source) and the write fence of
 * `migrate --final`: local ids kept, the id counter carried (deleted ids never handed out again),
 * lookup scans in UTF-8 byte order, and the fence refusing writes (retryable) until it lifts itself.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultConfig, parseConfig, resolveSchema } from '../../src/config/config.js';
import { isShardKitError } from '../../src/errors.js';
import { SqliteBackend } from '../../src/storage/sqlite/index.js';
import { fenceShardCreation, fenceShardFile, unfenceShardFile } from '../../src/storage/sqlite/sqlite-write-fence.js';
import { shardDdl } from '../../src/storage/sqlite/sqlite-ddl.js';

const schema = resolveSchema(parseConfig(defaultConfig({ shards: 8, pairs: 1 })));

function withBackend(fn: (b: SqliteBackend) => Promise<void>): () => Promise<void> {
  return async () => {
    const dir = mkdtempSync(join(tmpdir(), 'shardkit-copy-'));
    const b = new SqliteBackend({ root: dir, schema });
    try {
      await fn(b);
    } finally {
      await b.close();
      rmSync(dir, { recursive: true, force: true });
    }
  };
}

const ref = { host: 'h1', shard: 5, fleet: 'objects' as const };
const lref = { host: 'h1', shard: 5, fleet: 'lookups' as const };

test('putObjectRows keeps local ids and createdAt; scans page by local id; the counter follows', withBackend(async (b) => {
  await b.putObjectRows(ref, 'pins', [7, 3, 11].map((localId) => ({ localId, data: `{"n":${localId}}`, createdAt: new Date(1000 + localId) })));
  const all = await b.scanObjects(ref, 'pins', { limit: 10 });
  assert.deepEqual(all.map((r) => [r.localId, r.data, r.createdAt.getTime()]), [[3, '{"n":3}', 1003], [7, '{"n":7}', 1007], [11, '{"n":11}', 1011]]);
  assert.deepEqual((await b.scanObjects(ref, 'pins', { limit: 1, after: 3 })).map((r) => r.localId), [7]);
  // Replacing a row keeps its id.
  await b.putObjectRows(ref, 'pins', [{ localId: 7, data: '{"n":"seven"}', createdAt: new Date(5) }]);
  assert.equal((await b.getObjects(ref, [{ table: 'pins', localId: 7 }]))[0]!.data, '{"n":"seven"}');
  assert.equal(await b.objectIdHighWater(ref, 'pins'), 11);
  // A raised counter: the next insert comes after it, even with the rows above 11 never present.
  await b.raiseObjectIdHighWater(ref, 'pins', 40);
  await b.raiseObjectIdHighWater(ref, 'pins', 20); // never lowers
  assert.equal(await b.objectIdHighWater(ref, 'pins'), 40);
  assert.equal((await b.insertObject(ref, 'pins', '{}')).localId, 41);
  // A deleted last row still counts.
  await b.deleteObject(ref, 'pins', 41);
  assert.equal(await b.objectIdHighWater(ref, 'pins'), 41);
  await assert.rejects(b.putObjectRows(ref, 'pins', [{ localId: 0, data: '{}', createdAt: new Date() }]), (e: unknown) => isShardKitError(e, 'INVALID_ARGUMENT'));
  await assert.rejects(b.scanObjects(ref, 'nope', { limit: 1 }), (e: unknown) => isShardKitError(e, 'INVALID_ARGUMENT'));
}));

test('lookup scans follow UTF-8 byte order (as MariaDB VARBINARY and PostgreSQL BYTEA do)', withBackend(async (b) => {
  const keys = ['b', 'a', 'A', '\u{1F600}', '\uFF5E', 'a '];
  await b.putLookupRows(lref, 'lookup_email', keys.map((key, i) => ({ key, value: BigInt(i + 1) })));
  const rows = await b.scanLookups(lref, 'lookup_email', { limit: 100 });
  const bytes = [...keys].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
  assert.deepEqual(rows.map((r) => r.key), bytes);
  assert.deepEqual((await b.scanLookups(lref, 'lookup_email', { limit: 2, after: 'a' })).map((r) => r.key), bytes.slice(bytes.indexOf('a') + 1, bytes.indexOf('a') + 3));
  await b.putMappingRows(ref, 'board_has_pins', [{ fromId: 9n, toId: 2n, sequence: 5 }, { fromId: 1n, toId: 3n, sequence: 6 }]);
  assert.deepEqual((await b.scanMappings(ref, 'board_has_pins', { limit: 10 })).map((r) => `${r.fromId}:${r.toId}:${r.sequence}`), ['1:3:6', '9:2:5']);
}));

test('the write fence refuses every write with a retryable SHARD_MOVING, lifts itself at its deadline, and can be removed', withBackend(async (b) => {
  const { localId } = await b.insertObject(ref, 'pins', '{"a":1}');
  const path = b.shardPath(ref);
  fenceShardFile(path, { until: Date.now() + 600_000, reason: 'test cutover' });
  const refused = (e: unknown) => isShardKitError(e, 'SHARD_MOVING') && /read-only: test cutover/.test(e.message) && e.details?.retryAfterSeconds === 1;
  await assert.rejects(b.insertObject(ref, 'pins', '{}'), refused);
  await assert.rejects(b.updateObject(ref, 'pins', localId, () => '{"a":2}'), refused);
  await assert.rejects(b.deleteObject(ref, 'pins', localId), refused);
  await assert.rejects(b.addMapping(ref, 'board_has_pins', 1n, 2n, 3), refused);
  // Reads go on.
  assert.equal((await b.getObjects(ref, [{ table: 'pins', localId }]))[0]!.data, '{"a":1}');
  // A fence whose deadline has passed (a crashed migrator's) refuses nothing.
  fenceShardFile(path, { until: Date.now() - 1, reason: 'expired' });
  await b.updateObject(ref, 'pins', localId, () => '{"a":3}');
  // For good: no deadline.
  fenceShardFile(path, { reason: 'migrated' });
  await assert.rejects(b.deleteObject(ref, 'pins', localId), (e: unknown) => isShardKitError(e, 'SHARD_MOVING'));
  unfenceShardFile(path);
  assert.equal(await b.deleteObject(ref, 'pins', localId), true);
}));

// Issue 26: a fence covers only tables and files that exist, so --final also fences the making of
// new files and gives a file the tables of every fleet the map places in it.
test('migrate --final fence: a first write of the other fleet to a fenced file, or to a shard with no file, is refused', withBackend(async (b) => {
  // Object shard 0 and mod shard 0 in one file (a host serving both fleets), holding objects only.
  const both = { host: ref.host, shard: 0, fleet: 'lookups' as const };
  await b.insertObject({ ...ref, shard: 0 }, 'pins', '{}');
  const fence = { until: Date.now() + 600_000, reason: 'test cutover' };
  const refused = (e: unknown) => isShardKitError(e, 'SHARD_MOVING') && /read-only: test cutover/.test(e.message);
  fenceShardCreation(b.hostDir(ref.host), fence);
  fenceShardFile(b.shardPath(both), fence, undefined, shardDdl(schema, 'objects') + shardDdl(schema, 'lookups'));
  await assert.rejects(b.putLookup(both, 'lookup_email', 'k', 1n), refused);
  // Shard 5 has no file: making one is refused while the fence is up, and nothing is made.
  const none = { host: ref.host, shard: 5, fleet: 'lookups' as const };
  await assert.rejects(b.putLookup(none, 'lookup_email', 'k', 1n), refused);
  assert.equal(existsSync(b.shardPath(none)), false);
  assert.ok(!(await b.listShards(ref.host, 'lookups')).includes(5));
  // A fence whose deadline has passed (a crashed migrator's) refuses nothing.
  fenceShardCreation(b.hostDir(ref.host), { until: Date.now() - 1, reason: 'expired' });
  await b.putLookup(none, 'lookup_email', 'k', 1n);
  assert.equal(await b.getLookup(none, 'lookup_email', 'k'), 1n);
}));
