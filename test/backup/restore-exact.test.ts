import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultConfig } from '../../src/config/config.js';
import { isShardKitError } from '../../src/errors.js';
import { pinterestId } from '../../src/ids/pinterest-id.js';
import { ShardKit } from '../../src/kit/shard-kit.js';
import { movedSinceBackup, refuseMovedShards, shardLayout } from '../../src/ops/backup/backup-layout.js';
import type { BackupManifest } from '../../src/ops/backup/backup-manifest.js';
import type { BackupEngine } from '../../src/ops/backup/backup-engine.js';
import { fleetPairs } from '../../src/ops/backup/fleet-pairs.js';
import { createBackup, DirectoryTarget, restoreBackup } from '../../src/ops/backup/index.js';
import { ShardMap, type ShardMapJson } from '../../src/topology/shard-map.js';
import { cli } from '../cli/cli-harness.js';

/**
 * A full restore puts back exactly the backup: on the embedded default, shard files the backup
 * lacks read empty (their id counters kept, as the restored files' are); on pair engines, it
 * refuses (nothing changed) when shards moved to another pair since the backup, since each pair's
 * copy would land on the pair that holds its old ranges.
 */

describe('embedded restore: the shard files become exactly the backup\'s', () => {
  const dirs: string[] = [];
  after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

  test('a shard first written after the backup is emptied; a patched object is back to its old value', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'shardkit-rs-exact-'));
    const to = mkdtempSync(join(tmpdir(), 'shardkit-rs-exact-to-'));
    dirs.push(dir, to);
    const config = join(dir, 'shardkit.json');
    writeFileSync(config, JSON.stringify(defaultConfig({ shards: 16, pairs: 2 })));
    let kit = await ShardKit.open({ configPath: config, dataDir: dir });
    let old: bigint;
    let late: bigint;
    try {
      old = (await kit.objects.create('pin', { v: 'before' }, { shard: 5 })).id;
    } finally {
      await kit.close();
    }
    const b = await cli(['backup', 'create', '--config', config, '--to', to, '--json']);
    assert.equal(b.code, 0, b.stderr);
    kit = await ShardKit.open({ configPath: config, dataDir: dir });
    try {
      late = (await kit.objects.create('pin', { v: 'after' }, { shard: 7 })).id;
      await kit.objects.patch(old, { v: 'patched' });
    } finally {
      await kit.close();
    }
    const r = await cli(['backup', 'restore', '--config', config, '--from', to]);
    assert.equal(r.code, 0, r.stderr);
    kit = await ShardKit.open({ configPath: config, dataDir: dir });
    try {
      assert.equal((await kit.objects.get(old)).data.v, 'before', 'shard 5 holds the backup\'s value');
      await assert.rejects(kit.objects.get(late), (err: unknown) => isShardKitError(err, 'NOT_FOUND'), 'the object written to shard 7 after the backup is gone');
    } finally {
      await kit.close();
    }
  });
  test('ids acknowledged after the backup are never handed out again: shard 5 (in the backup) and shard 7 (first written after it, its file emptied but its counters kept)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'shardkit-rs-ids-'));
    const to = mkdtempSync(join(tmpdir(), 'shardkit-rs-ids-to-'));
    dirs.push(dir, to);
    const config = join(dir, 'shardkit.json');
    writeFileSync(config, JSON.stringify(defaultConfig({ shards: 16, pairs: 2 })));
    let kit = await ShardKit.open({ configPath: config, dataDir: dir });
    let x: bigint;
    const acked: bigint[] = [];
    try {
      x = (await kit.objects.create('pin', { v: 'x' }, { shard: 5 })).id;
    } finally {
      await kit.close();
    }
    const b = await cli(['backup', 'create', '--config', config, '--to', to, '--json']);
    assert.equal(b.code, 0, b.stderr);
    kit = await ShardKit.open({ configPath: config, dataDir: dir });
    try {
      for (const shard of [5, 5, 7, 7]) acked.push((await kit.objects.create('pin', { v: 'after' }, { shard })).id);
      // The newest id of each shard deleted again: its counter, not max(id), is what must stay.
      await kit.objects.delete(acked[1]!);
      await kit.objects.delete(acked[3]!);
    } finally {
      await kit.close();
    }
    const r = await cli(['backup', 'restore', '--config', config, '--from', to]);
    assert.equal(r.code, 0, r.stderr);
    kit = await ShardKit.open({ configPath: config, dataDir: dir });
    try {
      assert.equal((await kit.objects.get(x)).data.v, 'x');
      for (const id of acked) await assert.rejects(kit.objects.get(id), (err: unknown) => isShardKitError(err, 'NOT_FOUND'), `${id} is gone`);
      const fresh = [(await kit.objects.create('pin', { v: 'new' }, { shard: 5 })).id, (await kit.objects.create('pin', { v: 'new' }, { shard: 7 })).id];
      for (const id of fresh) assert.ok(!acked.includes(id) && id !== x, `the new id ${id} was not acknowledged before (${acked.join(', ')})`);
      assert.deepEqual(fresh.map((id) => pinterestId.decode(id).localId), [4, 3], 'each counter goes on from the live one');
      await assert.rejects(kit.objects.get(acked[0]!), (err: unknown) => isShardKitError(err, 'NOT_FOUND'), 'an old id still names nothing');
    } finally {
      await kit.close();
    }
    // Restored again: shard 7's file (not in the backup) is emptied again, and both counters still hold.
    const again = await cli(['backup', 'restore', '--config', config, '--from', to]);
    assert.equal(again.code, 0, again.stderr);
    kit = await ShardKit.open({ configPath: config, dataDir: dir });
    try {
      const next = [(await kit.objects.create('pin', { v: 'n' }, { shard: 5 })).id, (await kit.objects.create('pin', { v: 'n' }, { shard: 7 })).id];
      assert.deepEqual(next.map((id) => pinterestId.decode(id).localId), [5, 4]);
    } finally {
      await kit.close();
    }
  });
});

function map(version: number, ranges: ShardMapJson['ranges'], mod: ShardMapJson['modShards']['ranges']): ShardMap {
  return ShardMap.fromJSON({ version, ranges, modShards: { count: 4, ranges: mod } });
}

const BACKUP = map(3, [
  { range: [0, 7], master: 'MySQL001A', slave: 'MySQL001B', open: true },
  { range: [8, 15], master: 'MySQL002A', slave: 'MySQL002B', open: true },
], [{ range: [0, 3], master: 'MySQL001A', slave: 'MySQL001B' }]);

const manifest = (layoutOf: ShardMap | undefined): BackupManifest => ({
  format: 1, id: '20261129T100000000Z', engine: 'mariadb', mapVersion: 3, startedAt: 1, finishedAt: 2, units: [],
  ...(layoutOf !== undefined ? { layout: shardLayout(layoutOf) } : {}),
});

describe('full restore after a shard move: refused, naming the shards (pure check of manifest and live map)', () => {
  test('shards 0..7 moved to MySQL003A: VERSION_CONFLICT naming them, the pairs and what to do', () => {
    const live = map(5, [
      { range: [0, 7], master: 'MySQL003A', slave: 'MySQL003B', open: true },
      { range: [8, 15], master: 'MySQL002A', slave: 'MySQL002B', open: true },
    ], [{ range: [0, 3], master: 'MySQL001A', slave: 'MySQL001B' }]);
    assert.deepEqual(movedSinceBackup(shardLayout(BACKUP), live), [{ fleet: 'objects', first: 0, last: 7, backup: 'MySQL001A', now: 'MySQL003A' }]);
    assert.throws(() => refuseMovedShards(manifest(BACKUP), live), (err: unknown) => {
      assert.ok(isShardKitError(err, 'VERSION_CONFLICT'), String(err));
      assert.match((err as Error).message, /shards 0\.\.7 \(MySQL001A then, MySQL003A now\) moved since/);
      assert.match((err as Error).message, /backup restore --shards 0\.\.7/);
      assert.match((err as Error).message, /shards move 0\.\.7 --to MySQL001A/);
      assert.match((err as Error).message, /: nothing changed$/);
      assert.doesNotMatch((err as Error).message, /\n/);
      return true;
    });
  });

  test('a moved mod shard range and a part of a range are named too', () => {
    const live = map(6, [
      { range: [0, 7], master: 'MySQL001A', slave: 'MySQL001B', open: true },
      { range: [8, 11], master: 'MySQL002A', slave: 'MySQL002B', open: true },
      { range: [12, 15], master: 'MySQL001A', slave: 'MySQL001B', open: true },
    ], [{ range: [0, 1], master: 'MySQL001A', slave: 'MySQL001B' }, { range: [2, 3], master: 'MySQL002A', slave: 'MySQL002B' }]);
    assert.deepEqual(movedSinceBackup(shardLayout(BACKUP), live).map((m) => `${m.fleet} ${m.first}..${m.last}`), ['objects 12..15', 'modShards 2..3']);
    assert.throws(() => refuseMovedShards(manifest(BACKUP), live), /shards 12\.\.15 \(MySQL002A then, MySQL001A now\), mod shards 2\.\.3 \(MySQL001A then, MySQL002A now\) moved since/);
  });

  test('a failed-over pair (master and slave swapped, map version changed) is accepted', () => {
    const live = map(4, [
      { range: [0, 7], master: 'MySQL001B', slave: 'MySQL001A', open: true },
      { range: [8, 15], master: 'MySQL002A', slave: 'MySQL002B', open: true },
    ], [{ range: [0, 3], master: 'MySQL001B', slave: 'MySQL001A' }]);
    assert.deepEqual(movedSinceBackup(shardLayout(BACKUP), live), []);
    refuseMovedShards(manifest(BACKUP), live);
  });

  test('an unchanged map is accepted; a manifest without a layout (older backups) is accepted unchecked', () => {
    refuseMovedShards(manifest(BACKUP), BACKUP);
    const moved = map(5, [
      { range: [0, 15], master: 'MySQL002A', slave: 'MySQL002B', open: true },
    ], [{ range: [0, 3], master: 'MySQL002A', slave: 'MySQL002B' }]);
    refuseMovedShards(manifest(undefined), moved);
  });
});

/** A pair engine over an in-memory map that a test edits (a move, a failover); it records what a restore loaded. */
function fakeEngine(state: { map: ShardMap }): BackupEngine & { restored: string[] } {
  const restored: string[] = [];
  return {
    kind: 'mariadb',
    restored,
    mapVersion: async () => state.map.version,
    shardMap: async () => state.map,
    units: async () => fleetPairs(state.map),
    backupUnit: async (u, target, prefix) => {
      const bytes = await target.put(`${prefix}/data/${u.unit}.dump`, `rows of ${u.unit}`);
      return { unit: u.unit, source: u.source, position: '0-1-1', at: Date.now(), bytes, files: [`data/${u.unit}.dump`], tables: {} };
    },
    recover: async () => undefined,
    restoreUnit: async (u) => void restored.push(u.unit),
    drillUnit: async () => ({}),
    close: async () => undefined,
  };
}

describe('backup create records the layout; backup restore checks it before loading any pair', () => {
  const dirs: string[] = [];
  after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
  const newTarget = () => {
    const d = mkdtempSync(join(tmpdir(), 'shardkit-rs-layout-'));
    dirs.push(d);
    return new DirectoryTarget(d);
  };

  test('shards moved after the backup: the full restore is refused and no pair is loaded', async () => {
    const target = newTarget();
    const state = { map: BACKUP };
    const engine = fakeEngine(state);
    await createBackup(engine, target, { progress: 'silent' });
    state.map = map(5, [
      { range: [0, 7], master: 'MySQL003A', slave: 'MySQL003B', open: true },
      { range: [8, 15], master: 'MySQL002A', slave: 'MySQL002B', open: true },
    ], [{ range: [0, 3], master: 'MySQL001A', slave: 'MySQL001B' }]);
    await assert.rejects(restoreBackup(engine, target, { progress: 'silent' }), (err: unknown) => {
      assert.ok(isShardKitError(err, 'VERSION_CONFLICT'), String(err));
      assert.match((err as Error).message, /shards 0\.\.7 \(MySQL001A then, MySQL003A now\)/);
      return true;
    });
    assert.deepEqual(engine.restored, [], 'nothing loaded');
  });

  test('after a failover (slave promoted) the full restore goes ahead', async () => {
    const target = newTarget();
    const state = { map: BACKUP };
    const engine = fakeEngine(state);
    await createBackup(engine, target, { progress: 'silent' });
    state.map = map(4, [
      { range: [0, 7], master: 'MySQL001B', slave: 'MySQL001A', open: true },
      { range: [8, 15], master: 'MySQL002A', slave: 'MySQL002B', open: true },
    ], [{ range: [0, 3], master: 'MySQL001B', slave: 'MySQL001A' }]);
    await restoreBackup(engine, target, { progress: 'silent' });
    assert.deepEqual(engine.restored, ['MySQL001A', 'MySQL002A']);
  });
});
