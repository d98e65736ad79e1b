import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isShardKitError } from '../../src/errors.js';
import type { BackupEngine, BackupUnitSource } from '../../src/ops/backup/backup-engine.js';
import { fleetPairs } from '../../src/ops/backup/fleet-pairs.js';
import { createBackup, DirectoryTarget, listBackups, type BackupManifest } from '../../src/ops/backup/index.js';
import { SqliteBackupEngine } from '../../src/ops/backup/sqlite-backup-engine.js';
import type { ShardKitConfig } from '../../src/config/config.js';
import { MemoryTopologyStore } from '../../src/topology/memory/memory-topology-store.js';
import { ShardMap, type MoveRecord, type ShardMapJson } from '../../src/topology/shard-map.js';

/**
 * A backup taken while a shard move or a failover runs is refused with a message naming it, or
 * (when the map changes under a running backup) removed: never a manifest for copies that do not
 * describe one fleet. The MariaDB and PostgreSQL engines both take their units from fleetPairs
 * and their version from the live map, so the runner's checks are theirs; here they run against
 * an engine whose map a test edits between two units (what a failover does to a real fleet).
 */

function mapJson(moves?: MoveRecord[]): ShardMapJson {
  return {
    version: 7,
    ranges: [
      { range: [0, 7], master: 'A1', slave: 'A2', open: true },
      { range: [8, 15], master: 'B1', slave: 'B2', open: true },
    ],
    modShards: { count: 4, ranges: [{ range: [0, 3], master: 'A1', slave: 'A2' }] },
    ...(moves ? { moves } : {}),
  };
}

const record = (kind: MoveRecord['kind']): MoveRecord => ({ id: `${kind}-1`, kind, range: [8, 15], source: { master: 'B1', slave: 'B2' }, target: kind === 'failover' ? { master: 'B2', slave: 'B1' } : { master: 'C1', slave: 'C2' }, phase: 'frozen', holdMs: 400, startedAt: 1, updatedAt: 1 });

/** An engine over an in-memory map; `between` runs after each unit is copied. */
function fakeEngine(state: { map: ShardMap }, between: (unit: string) => void = () => undefined): BackupEngine & { copied: string[] } {
  const copied: string[] = [];
  return {
    kind: 'mariadb',
    copied,
    mapVersion: async () => state.map.version,
    units: async (): Promise<BackupUnitSource[]> => fleetPairs(state.map),
    backupUnit: async (u, target, prefix) => {
      const bytes = await target.put(`${prefix}/data/${u.unit}.dump`, `rows of ${u.unit}`);
      copied.push(u.unit);
      between(u.unit);
      return { unit: u.unit, source: u.source, position: '0-1-1', at: Date.now(), bytes, files: [`data/${u.unit}.dump`], tables: {} };
    },
    recover: async () => undefined,
    restoreUnit: async () => undefined,
    drillUnit: async () => ({}),
    close: async () => undefined,
  };
}

describe('a backup during a shard move or a failover', () => {
  const dirs: string[] = [];
  const newTarget = () => {
    const d = mkdtempSync(join(tmpdir(), 'shardkit-bk-mapchange-'));
    dirs.push(d);
    return { dir: d, target: new DirectoryTarget(d) };
  };
  after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

  for (const kind of ['move', 'failover'] as const) {
    test(`refused before anything is written while a ${kind} is recorded in the map, the message naming it`, async () => {
      const { dir, target } = newTarget();
      const engine = fakeEngine({ map: ShardMap.fromJSON(mapJson([record(kind)])) });
      await assert.rejects(createBackup(engine, target, { progress: 'silent' }), (err: unknown) => {
        assert.ok(isShardKitError(err, 'PRECONDITION_FAILED'), String(err));
        assert.match((err as Error).message, new RegExp(`${kind === 'failover' ? 'a failover' : 'a shard move'} \\(${kind}-1, B1 -> ${kind === 'failover' ? 'B2' : 'C1'}, frozen\\) is in progress at map version 7: back up after it finished: nothing written`));
        return true;
      });
      assert.deepEqual(engine.copied, [], 'no slave was read');
      assert.deepEqual(readdirSync(dir), [], 'nothing written');
    });
  }

  test('the embedded default refuses a move in progress with the same message (it used to name no move)', async () => {
    const { dir, target } = newTarget();
    const store = new MemoryTopologyStore();
    await store.write(ShardMap.fromJSON(mapJson([record('move')])), 0);
    // The config is read only when the store holds no map: this one holds one.
    const engine = new SqliteBackupEngine({} as ShardKitConfig, store, dir);
    await assert.rejects(createBackup(engine, target, { progress: 'silent' }), (err: unknown) => isShardKitError(err, 'PRECONDITION_FAILED') && /^a shard move \(move-1, B1 -> C1, frozen\) is in progress at map version 1: back up after it finished: nothing written$/.test((err as Error).message));
    assert.deepEqual(readdirSync(dir), []);
    await store.close();
  });

  test('a failover between two pairs\' copies: refused, the half backup removed (no manifest); once it is done the next run completes at the new version', async () => {
    const { dir, target } = newTarget();
    const state = { map: ShardMap.fromJSON(mapJson()) };
    // After A1 is copied, B1's slave is promoted: the map names B2 master at version 8.
    const failover = (unit: string) => {
      if (unit !== 'A1' || state.map.version !== 7) return;
      const json = mapJson();
      json.version = 8;
      json.ranges[1] = { range: [8, 15], master: 'B2', slave: 'B1', open: true };
      state.map = ShardMap.fromJSON(json);
    };
    await assert.rejects(createBackup(fakeEngine(state, failover), target, { progress: 'silent' }), (err: unknown) => {
      assert.ok(isShardKitError(err, 'PRECONDITION_FAILED'), String(err));
      assert.match((err as Error).message, /the shard map changed while the backup ran \(version 7 -> 8: a move or a failover\): backup \S+ removed, run it again/);
      return true;
    });
    assert.deepEqual(await listBackups(target), [], 'no backup, complete or not, is left');
    assert.deepEqual(readdirSync(dir), []);

    const again = fakeEngine(state);
    const m: BackupManifest = await createBackup(again, target, { progress: 'silent' });
    assert.equal(m.mapVersion, 8);
    assert.deepEqual(m.units.map((u) => `${u.unit}<-${u.source}`), ['A1<-A2', 'B2<-B1'], 'the new master\'s pair is read from its new slave');
    assert.deepEqual((await listBackups(target)).map((b) => b.complete), [true]);
  });
});
