/**
 * Drift between a mapping and its reverse (SPEC §3), found and repaired over every shard of a
 * real SQLite-backed kit, and through the CLI.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultConfig } from '../../src/config/config.js';
import { isShardKitError } from '../../src/errors.js';
import { checkMappingDrift, type DriftProgress } from '../../src/ops/mapping-drift.js';
import { MemoryCache } from '../../src/cache/index.js';
import type { MappingRow } from '../../src/storage/shard-backend.js';
import { ShardKit } from '../../src/kit/shard-kit.js';
import { makeKit, testSchema } from '../kit/kit-fixture.js';
import { cli, cliProcess, ensureBuilt } from '../cli/cli-harness.js';

async function expectCode(p: Promise<unknown>, code: string): Promise<void> {
  await assert.rejects(p, (err: unknown) => isShardKitError(err) && err.code === code);
}

/** Every row of a mapping over all shards of the kit's map. */
async function allRows(kit: ShardKit, mapping: string): Promise<MappingRow[]> {
  const table = kit.schema.mappings.find((m) => m.name === mapping)!.table;
  const map = await kit.shardMap();
  const out: MappingRow[] = [];
  for (const r of map.objectRanges()) {
    for (let s = r.range[0]; s <= r.range[1]; s++) out.push(...(await kit.backend.scanMappings({ host: map.locate(s).master, shard: s, fleet: 'objects' }, table, { limit: 1000 })));
  }
  return out;
}

/** Boards with pins on several shards: both directions written, then some of one side lost. */
async function seed(kit: ShardKit) {
  const boards = [];
  const pins = [];
  for (let b = 0; b < 3; b++) {
    const board = await kit.objects.create('board', { b }, { shard: b * 5 });
    boards.push(board);
    for (let p = 0; p < 4; p++) {
      // Pins on other shards than their board: the reverse lives elsewhere.
      const pin = await kit.objects.create('pin', { b, p }, { shard: (b * 5 + p + 1) % 16 });
      pins.push(pin);
      await kit.mappings.add('board_has_pins', board.id, pin.id, { sequence: 100 * b + p });
      await kit.mappings.add('pin_owned_by_board', pin.id, board.id, { sequence: 100 * b + p });
    }
  }
  return { boards, pins };
}

test('a mapping and its reverse that agree show no drift; every row of both sides is read', async () => {
  const f = makeKit();
  try {
    await seed(f.kit);
    const seen: DriftProgress[] = [];
    const report = await checkMappingDrift(f.kit, { mapping: 'board_has_pins', reverse: 'pin_owned_by_board', onProgress: (p) => seen.push(p) });
    assert.deepEqual({ shards: report.shards, scanned: report.scanned, missing: report.missing, orphans: report.orphans, repaired: report.repaired },
      { shards: 16, scanned: { mapping: 12, reverse: 12 }, missing: 0, orphans: 0, repaired: undefined });
    assert.equal(seen.length, 32, 'one progress call per shard per side');
    assert.deepEqual(seen.at(-1), { done: 32, total: 32, side: 'reverse', missing: 0, orphans: 0 });
  } finally {
    await f.cleanup();
  }
});

test('drift is found both ways, repaired from the mapping (adds with its sequence, removes orphans), and a second run is clean', async () => {
  const f = makeKit();
  try {
    const { boards, pins } = await seed(f.kit);
    // Lost second writes: two reverse pairs never written; one reverse pair whose mapping pair was removed.
    await f.kit.mappings.remove('pin_owned_by_board', pins[1]!.id, boards[0]!.id);
    await f.kit.mappings.remove('pin_owned_by_board', pins[6]!.id, boards[1]!.id);
    await f.kit.mappings.remove('board_has_pins', boards[2]!.id, pins[11]!.id);
    const truthBefore = await allRows(f.kit, 'board_has_pins');

    for (const pageSize of [500, 2, 1]) {
      const report = await checkMappingDrift(f.kit, { mapping: 'board_has_pins', reverse: 'pin_owned_by_board', pageSize });
      assert.equal(report.missing, 2, `pageSize ${pageSize}`);
      assert.equal(report.orphans, 1, `pageSize ${pageSize}`);
      assert.deepEqual(new Set(report.examples.missing.map((p) => `${p.from}>${p.to}`)), new Set([`${boards[0]!.id}>${pins[1]!.id}`, `${boards[1]!.id}>${pins[6]!.id}`]));
      assert.deepEqual(report.examples.orphans, [{ from: pins[11]!.id.toString(), to: boards[2]!.id.toString() }]);
    }

    const repaired = await checkMappingDrift(f.kit, { mapping: 'board_has_pins', reverse: 'pin_owned_by_board', repair: true, pageSize: 2 });
    assert.deepEqual(repaired.repaired, { added: 2, removed: 1, skipped: 0 });
    const again = await checkMappingDrift(f.kit, { mapping: 'board_has_pins', reverse: 'pin_owned_by_board' });
    assert.deepEqual([again.missing, again.orphans], [0, 0]);
    // The added reverse pairs carry the mapping's sequence; the mapping itself was not written.
    assert.deepEqual((await f.kit.mappings.list('pin_owned_by_board', pins[6]!.id)).items, [{ id: boards[1]!.id, sequence: 102 }]);
    assert.deepEqual((await f.kit.mappings.list('pin_owned_by_board', pins[11]!.id)).items, []);
    assert.deepEqual(await allRows(f.kit, 'board_has_pins'), truthBefore);
  } finally {
    await f.cleanup();
  }
});

test('repairs invalidate cached mapping pages like any write', async () => {
  const f = makeKit();
  const cached = new ShardKit({ backend: f.backend, schema: testSchema, shardMap: await f.kit.shardMap(), cache: new MemoryCache() });
  try {
    const { boards, pins } = await seed(cached);
    await cached.mappings.remove('pin_owned_by_board', pins[2]!.id, boards[0]!.id);
    // Cached as empty before the repair.
    assert.deepEqual((await cached.mappings.list('pin_owned_by_board', pins[2]!.id)).items, []);
    assert.equal(await cached.mappings.count('pin_owned_by_board', pins[2]!.id), 0);
    await checkMappingDrift(cached, { mapping: 'board_has_pins', reverse: 'pin_owned_by_board', repair: true });
    assert.deepEqual((await cached.mappings.list('pin_owned_by_board', pins[2]!.id)).items, [{ id: boards[0]!.id, sequence: 2 }]);
    assert.equal(await cached.mappings.count('pin_owned_by_board', pins[2]!.id), 1);
  } finally {
    await cached.close();
    await f.cleanup();
  }
});

test('a mapping can be checked against itself (symmetric relations); bad arguments are refused before anything is read', async () => {
  const f = makeKit();
  try {
    const [a, b, c] = [await f.kit.objects.create('user', {}), await f.kit.objects.create('user', {}), await f.kit.objects.create('user', {})];
    await f.kit.mappings.add('user_follows_user', a.id, b.id);
    await f.kit.mappings.add('user_follows_user', b.id, a.id);
    await f.kit.mappings.add('user_follows_user', a.id, c.id);
    const report = await checkMappingDrift(f.kit, { mapping: 'user_follows_user', reverse: 'user_follows_user' });
    // a → c has no c → a; seen once as missing and once as an orphan (the same pair, both ways).
    assert.deepEqual([report.missing, report.orphans], [1, 1]);
    await expectCode(checkMappingDrift(f.kit, { mapping: 'nope', reverse: 'pin_owned_by_board' }), 'UNKNOWN_MAPPING');
    await expectCode(checkMappingDrift(f.kit, { mapping: 'board_has_pins', reverse: 'user_has_boards' }), 'INVALID_ARGUMENT');
    await expectCode(checkMappingDrift(f.kit, { mapping: 'board_has_pins', reverse: 'board_has_pins' }), 'INVALID_ARGUMENT');
    for (const pageSize of [0, 1.5, 1001]) await expectCode(checkMappingDrift(f.kit, { mapping: 'board_has_pins', reverse: 'pin_owned_by_board', pageSize }), 'INVALID_ARGUMENT');
  } finally {
    await f.cleanup();
  }
});

/** A data dir with a config file of 16 shards, as `serve` and the CLI use, and a kit on it. */
async function dataDir(prefix: string): Promise<{ dir: string; kit: ShardKit }> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  writeFileSync(join(dir, 'shardkit.json'), JSON.stringify({ ...defaultConfig({ shards: 16, pairs: 2 }), topologyStore: { kind: 'file', path: 'topology.json' } }));
  return { dir, kit: await ShardKit.open({ configPath: join(dir, 'shardkit.json'), dataDir: dir }) };
}

test('shardkit mappings drift: exit 3 with a readable report on drift, --repair --json mends it, bad input is one line and exit 2', async () => {
  const { dir, kit } = await dataDir('shardkit-drift-');
  try {
    const board = await kit.objects.create('board', {});
    const pin = await kit.objects.create('pin', {}, { near: board.id });
    await kit.mappings.add('board_has_pins', board.id, pin.id, { sequence: 7 });
    await kit.close();
    const run = (...args: string[]) => cli(['mappings', 'drift', ...args]);

    const found = await run('board_has_pins', 'pin_owned_by_board', '--data', dir);
    assert.equal(found.code, 3, found.stderr);
    assert.match(found.stdout, /1 pair of board_has_pins without their reverse in pin_owned_by_board/);
    assert.match(found.stdout, new RegExp(`missing  pin_owned_by_board ${pin.id} → ${board.id}`));
    assert.match(found.stdout, /run again with --repair/);
    assert.match(found.stderr, /"msg":"mappings drift board_has_pins pin_owned_by_board finished"/, 'progress as JSON lines off a TTY');
    // The built binary: the same report and exit 3 (set through process.exitCode).
    ensureBuilt();
    const foundByBinary = await cliProcess(['mappings', 'drift', 'board_has_pins', 'pin_owned_by_board', '--data', dir]);
    const untimed = (s: string) => s.replace(/\(\d+\.\d s\)/, '(time)');
    assert.deepEqual([foundByBinary.code, untimed(foundByBinary.stdout)], [3, untimed(found.stdout)], foundByBinary.stderr);

    const fixed = await run('board_has_pins', 'pin_owned_by_board', '--data', dir, '--repair', '--json');
    assert.equal(fixed.code, 0, fixed.stderr);
    const report = JSON.parse(fixed.stdout) as { missing: number; repaired: { added: number } };
    assert.deepEqual([report.missing, report.repaired.added], [1, 1]);
    assert.equal((await run('board_has_pins', 'pin_owned_by_board', '--data', dir)).code, 0);

    for (const args of [['nope', 'pin_owned_by_board', '--data', dir], ['board_has_pins', 'pin_owned_by_board', '--data', join(dir, 'missing')], ['board_has_pins', 'pin_owned_by_board', '--data', dir, '--page-size', '0']]) {
      const bad = await run(...args);
      assert.equal(bad.code, 2, `${args.join(' ')}: ${bad.stderr}`);
      assert.match(bad.stderr, /^shardkit: [A-Z_]+: .+\n$/, 'one readable line');
    }
    const help = await run('--help');
    assert.equal(help.code, 0);
    assert.match(help.stdout, /--repair/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('repair re-reads each pair first: a pair removed (or written) since the scan is left alone; a mapping checked against itself is not repaired', async () => {
  const f = makeKit();
  try {
    const { boards, pins } = await seed(f.kit);
    await f.kit.mappings.remove('pin_owned_by_board', pins[1]!.id, boards[0]!.id);
    await f.kit.mappings.remove('pin_owned_by_board', pins[2]!.id, boards[0]!.id);
    // Right after the lookup that finds them missing, the user un-pins pins[1] (its mapping pair
    // removed) and something writes pins[2]'s reverse: neither may be repaired.
    const getMappings = f.backend.getMappings.bind(f.backend);
    let raced = false;
    f.backend.getMappings = async (...args) => {
      const found = await getMappings(...args);
      // The page's lookups (one per shard) have all run by the time the first one resumes.
      if (!raced && args[1] === 'pin_owned_by_board' && args[2].some((p) => p.fromId === pins[1]!.id || p.fromId === pins[2]!.id)) {
        raced = true;
        await f.kit.mappings.remove('board_has_pins', boards[0]!.id, pins[1]!.id);
        await f.kit.mappings.add('pin_owned_by_board', pins[2]!.id, boards[0]!.id, { sequence: 2 });
      }
      return found;
    };
    const report = await checkMappingDrift(f.kit, { mapping: 'board_has_pins', reverse: 'pin_owned_by_board', repair: true });
    assert.ok(raced);
    assert.equal(report.missing, 2, 'both were missing when scanned');
    assert.deepEqual(report.repaired, { added: 0, removed: 0, skipped: 0 });
    assert.deepEqual((await f.kit.mappings.list('pin_owned_by_board', pins[1]!.id)).items, [], 'the un-pinned pin did not get its reverse back');
    const clean = await checkMappingDrift(f.kit, { mapping: 'board_has_pins', reverse: 'pin_owned_by_board' });
    assert.deepEqual([clean.missing, clean.orphans], [0, 0]);
    await expectCode(checkMappingDrift(f.kit, { mapping: 'user_follows_user', reverse: 'user_follows_user', repair: true }), 'INVALID_ARGUMENT');
  } finally {
    await f.cleanup();
  }
});

test('a pair that cannot be repaired (an ID of no type in the schema) is skipped, and the CLI still exits 3 after --repair', async () => {
  const { dir, kit } = await dataDir('shardkit-drift-skip-');
  try {
    const board = await kit.objects.create('board', {}, { shard: 3 });
    // Written by hand: to_id 12345 is shard 0, type 0, which the schema does not have.
    await kit.backend.addMapping({ host: (await kit.shardMap()).locate(3).master, shard: 3, fleet: 'objects' }, 'board_has_pins', board.id, 12345n, 1);
    const report = await checkMappingDrift(kit, { mapping: 'board_has_pins', reverse: 'pin_owned_by_board', repair: true });
    assert.deepEqual([report.missing, report.repaired], [1, { added: 0, removed: 0, skipped: 1 }]);
    await kit.close();
    const res = await cli(['mappings', 'drift', 'board_has_pins', 'pin_owned_by_board', '--data', dir, '--repair']);
    assert.equal(res.code, 3, res.stdout + res.stderr);
    assert.match(res.stdout, /1 skipped/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('rows stored on a shard their from ID does not name are reported apart and never repaired (no add/remove loop across runs)', async () => {
  const { dir, kit } = await dataDir('shardkit-drift-misplaced-');
  try {
    const board = await kit.objects.create('board', {}, { shard: 3 });
    const pin = await kit.objects.create('pin', {}, { shard: 5 });
    await kit.mappings.add('board_has_pins', board.id, pin.id, { sequence: 1 });
    // The reverse pair written by hand onto the board's shard instead of the pin's.
    const map = await kit.shardMap();
    await kit.backend.addMapping({ host: map.locate(3).master, shard: 3, fleet: 'objects' }, 'pin_owned_by_board', pin.id, board.id, 1);
    for (let run = 0; run < 2; run++) {
      const report = await checkMappingDrift(kit, { mapping: 'board_has_pins', reverse: 'pin_owned_by_board', repair: true });
      assert.deepEqual(report.misplaced, { mapping: 0, reverse: 1 }, `run ${run}`);
      assert.deepEqual(report.examples.misplaced, [{ table: 'pin_owned_by_board', shard: 3, from: pin.id.toString(), to: board.id.toString() }]);
      // Run 0 adds the reverse where the API reads it; run 1 finds nothing more to do.
      assert.deepEqual(report.repaired, run === 0 ? { added: 1, removed: 0, skipped: 0 } : { added: 0, removed: 0, skipped: 0 }, `run ${run}`);
      assert.deepEqual([report.missing, report.orphans], run === 0 ? [1, 0] : [0, 0], `run ${run}`);
    }
    await kit.close();
    const res = await cli(['mappings', 'drift', 'board_has_pins', 'pin_owned_by_board', '--data', dir]);
    assert.equal(res.code, 3, res.stdout + res.stderr);
    assert.match(res.stdout, /1 row stored on a shard their from ID does not name/);
    assert.match(res.stdout, new RegExp(`misplaced  pin_owned_by_board ${pin.id} → ${board.id} on shard 3`));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a mapping row on the wrong shard is not mirrored into the reverse and removed again on every run', async () => {
  const f = makeKit();
  try {
    const board = await f.kit.objects.create('board', {}, { shard: 3 });
    const pin = await f.kit.objects.create('pin', {}, { shard: 5 });
    const map = await f.kit.shardMap();
    // board → pin written by hand on the pin's shard: the API (which reads the board's shard) never sees it.
    await f.kit.backend.addMapping({ host: map.locate(5).master, shard: 5, fleet: 'objects' }, 'board_has_pins', board.id, pin.id, 1);
    for (let run = 0; run < 2; run++) {
      const report = await checkMappingDrift(f.kit, { mapping: 'board_has_pins', reverse: 'pin_owned_by_board', repair: true });
      assert.deepEqual(report.misplaced, { mapping: 1, reverse: 0 }, `run ${run}`);
      assert.deepEqual(report.repaired, { added: 0, removed: 0, skipped: 0 }, `run ${run}`);
    }
    assert.deepEqual((await f.kit.mappings.list('pin_owned_by_board', pin.id)).items, []);
  } finally {
    await f.cleanup();
  }
});
