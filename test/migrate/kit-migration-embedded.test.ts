/**
 * The migrator between two embedded stores (no server needed, so it runs in the unit loop):
 * copy, catch-up rounds that carry updates and deletes of objects, mappings and lookups, a
 * shard file the map does not assign reported as skipped, --final, and a second run copying
 * nothing. The server fleets are covered by kit-migration-{mariadb,postgres}.test.ts.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { isShardKitError } from '../../src/errors.js';
import { ShardKit } from '../../src/kit/shard-kit.js';
import { migrateKit } from '../../src/migrate/kit-migration.js';
import { diffDumps, dumpStore, makeEmbeddedStore, openBackend } from './kit-migration-harness.js';

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

test('embedded -> embedded: copy, catch up updates and deletes, skip what the map does not assign, cut over', async () => {
  const src = makeEmbeddedStore();
  const dst = makeEmbeddedStore('shardkit-migdst-');
  dirs.push(src.dir, dst.dir);
  const kit = await ShardKit.open({ configPath: src.configPath });
  const board = await kit.objects.create('board', { name: 'b' }, { shard: 2 });
  const pins = [];
  for (let i = 0; i < 120; i++) {
    const p = await kit.objects.create('pin', { i }, { near: board.id });
    pins.push(p);
    await kit.mappings.add('board_has_pins', board.id, p.id);
    await kit.lookups.put('email', `u${i}@x`, p.id);
  }
  // A file on the standby host: not a master in the map, so not copied (and said so).
  const { backend, map } = await openBackend(src.configPath);
  const standby = map.locate(5).slave!;
  await backend.putObjectRows({ host: standby, shard: 5, fleet: 'objects' }, 'pins', [{ localId: 1, data: '{}', createdAt: new Date() }]);
  await backend.close();

  const first = await migrateKit({ from: src.configPath, to: dst.configPath, chunkRows: 16 });
  assert.equal(first.rounds[0]!.upserts, 1 + 120 + 120 + 120);
  assert.equal(first.delta, 0);
  assert.deepEqual(first.skipped.map((s) => [s.fleet, s.shard]), [['objects', 5]]);
  assert.match(first.skipped[0]!.reason, /does not name as this shard's master/);
  assert.deepEqual(diffDumps(await dumpStore(src.configPath), await dumpStore(dst.configPath)), []);

  // Updates, hard deletes, removed mappings and lookups: each shows up in the next run's delta.
  for (let i = 0; i < 10; i++) await kit.objects.patch(pins[i]!.id, { changed: true });
  for (let i = 10; i < 15; i++) await kit.objects.delete(pins[i]!.id, { hard: true });
  for (let i = 15; i < 18; i++) await kit.mappings.remove('board_has_pins', board.id, pins[i]!.id);
  for (let i = 18; i < 20; i++) await kit.lookups.delete('email', `u${i}@x`);
  const second = await migrateKit({ from: src.configPath, to: dst.configPath, chunkRows: 16 });
  assert.equal(second.rounds[0]!.upserts, 10);
  assert.equal(second.rounds[0]!.deletes, 5 + 3 + 2);
  assert.equal(second.delta, 0);
  assert.deepEqual(diffDumps(await dumpStore(src.configPath), await dumpStore(dst.configPath)), []);

  const final = await migrateKit({ from: src.configPath, to: dst.configPath, final: true });
  assert.ok(final.final);
  // The source's map says so.
  const { ShardMap } = await import('../../src/topology/shard-map.js');
  const { FileTopologyStore } = await import('../../src/topology/index.js');
  const store = new FileTopologyStore({ path: `${src.dir}/topology.json` });
  const srcMap: InstanceType<typeof ShardMap> | undefined = await store.read();
  await store.close();
  assert.match(srcMap?.readOnly?.reason ?? '', /migrated to .* read-only/);
  await assert.rejects(kit.objects.patch(pins[0]!.id, { late: true }), (err: unknown) => isShardKitError(err, 'SHARD_MOVING'));
  await assert.rejects(kit.lookups.put('email', 'late@x', pins[0]!.id), (err: unknown) => isShardKitError(err, 'SHARD_MOVING'));
  await kit.close();
  const again = await migrateKit({ from: src.configPath, to: dst.configPath });
  assert.ok(again.final, 'a run after the cutover says the source was migrated');
  for (const r of again.rounds) assert.equal(r.upserts + r.deletes, 0);

  // The same IDs read the same objects on the target.
  const tk = await ShardKit.open({ configPath: dst.configPath });
  try {
    assert.deepEqual((await tk.objects.get(pins[0]!.id)).data, { i: 0, changed: true });
    await assert.rejects(tk.objects.get(pins[10]!.id), (err: unknown) => isShardKitError(err, 'NOT_FOUND'));
    assert.equal(await tk.lookups.get('email', 'u18@x'), undefined);
    assert.equal(await tk.lookups.get('email', 'u30@x'), pins[30]!.id);
  } finally {
    await tk.close();
  }
});

test('bad input: a config that is not an embedded store, a schema that differs, too few shards', async () => {
  const src = makeEmbeddedStore();
  dirs.push(src.dir);
  const { writeFileSync, readFileSync } = await import('node:fs');
  const cfg = JSON.parse(readFileSync(src.configPath, 'utf8'));
  const other = makeEmbeddedStore('shardkit-migbad-');
  dirs.push(other.dir);
  // A type id that changed: every ID would change.
  writeFileSync(other.configPath, JSON.stringify({ ...cfg, schema: { ...cfg.schema, types: cfg.schema.types.map((t: { name: string; id: number }) => (t.name === 'pin' ? { ...t, id: 9 } : t)) } }));
  await assert.rejects(migrateKit({ from: src.configPath, to: other.configPath }), (err: unknown) => isShardKitError(err, 'INVALID_CONFIG') && /type pin has id 9 there, 1 here/.test(err.message));
  writeFileSync(other.configPath, JSON.stringify({ ...cfg, shardMap: { ...cfg.shardMap, modShards: { count: 4, ranges: [{ range: [0, 3], master: 'lookup001' }] } } }));
  await assert.rejects(migrateKit({ from: src.configPath, to: other.configPath }), (err: unknown) => isShardKitError(err, 'INVALID_CONFIG') && /mod shards/.test(err.message));
  await assert.rejects(migrateKit({ from: src.configPath, to: src.configPath }), (err: unknown) => isShardKitError(err, 'INVALID_ARGUMENT'));
});
