/**
 * `shardkit shards move | verify | drop-moved` on the embedded default, through the built CLI:
 * real processes, a real kill -9 of the mover in each phase, then --resume or --abort.
 * @integration (scripts/run-tests.mjs: in `npm test`, not `npm run test:unit`): ~10 CLI processes.
 */
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { defaultConfig } from '../../src/config/config.js';
import { ShardKit } from '../../src/kit/shard-kit.js';
import { pinterestId } from '../../src/ids/pinterest-id.js';
import { CLI, assertBadInput, cli, ensureBuilt } from '../cli/cli-harness.js';
import { killMoverAfter } from './kill-mover.js';

before(() => ensureBuilt());

interface Data {
  dir: string;
  ids: bigint[];
  cleanup(): void;
}

async function dataDir(): Promise<Data> {
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-shards-cli-'));
  writeFileSync(join(dir, 'shardkit.json'), JSON.stringify(defaultConfig({ shards: 16, pairs: 2 })));
  const kit = await ShardKit.open({ configPath: join(dir, 'shardkit.json'), dataDir: dir });
  const ids: bigint[] = [];
  try {
    for (let s = 0; s < 8; s++) {
      const board = await kit.objects.create('board', { s }, { shard: s });
      ids.push(board.id);
      for (let i = 0; i < 5; i++) {
        const pin = await kit.objects.create('pin', { s, i }, { near: board.id });
        await kit.mappings.add('board_has_pins', board.id, pin.id);
        ids.push(pin.id);
      }
    }
  } finally {
    await kit.close();
  }
  return { dir, ids, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

const file = (d: Data, host: string, shard: number) => join(d.dir, 'hosts', host, `db${String(shard).padStart(5, '0')}.sqlite`);

async function readAll(d: Data, write = false): Promise<void> {
  const kit = await ShardKit.open({ configPath: join(d.dir, 'shardkit.json'), dataDir: d.dir });
  try {
    for (const id of d.ids) {
      const obj = await kit.objects.get(id);
      assert.equal((obj.data as { s: number }).s, pinterestId.decode(id).shard);
      if (write) await kit.objects.patch(id, { touched: true });
    }
  } finally {
    await kit.close();
  }
}

const topologyText = (d: Data) => readFileSync(join(d.dir, 'topology.json'), 'utf8');

test('shards move, verify and drop-moved: the shards change hosts, every object stays readable, the old copies go', async () => {
  const d = await dataDir();
  try {
    const r = await cli(['shards', 'move', '0..3', '--to', 'MySQL002A', '--to-slave', 'MySQL002B', '--data', d.dir, '--json']);
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.trim().split('\n').map((l) => JSON.parse(l) as { event: string; phase?: string; outcome?: string; freezeToSwitchMs?: number });
    assert.deepEqual(lines.filter((l) => l.event === 'phase').map((l) => l.phase), ['started', 'copied', 'frozen', 'fenced', 'fenced', 'switched']);
    const result = lines.at(-1)!;
    assert.equal(result.outcome, 'switched');
    assert.equal(typeof result.freezeToSwitchMs, 'number');
    const map = JSON.parse(topologyText(d)) as { ranges: Array<{ range: [number, number]; master: string; frozen?: unknown }>; moves: Array<{ phase: string }> };
    assert.deepEqual(map.ranges.map((x) => [x.range, x.master]), [[[0, 3], 'MySQL002A'], [[4, 7], 'MySQL001A'], [[8, 15], 'MySQL002A']]);
    assert.equal(map.moves[0]!.phase, 'switched');
    await readAll(d, true);
    for (let s = 0; s <= 3; s++) assert.ok(existsSync(file(d, 'MySQL002A', s)));

    // verify: the fenced source against the target, clean after the writes (they went to the target only...
    // so the old copy is now behind: that is exactly what verify must report).
    const v = await cli(['shards', 'verify', '0..3', '--data', d.dir]);
    assert.equal(v.code, 3, v.stdout + v.stderr);
    assert.match(v.stdout, /MISMATCH shard 0 boards keys -inf\.\.1: 1 row\(s\) on the source, 1 on the other copy/);
    // drop-moved removes the fenced copies and forgets the move.
    const dm = await cli(['shards', 'drop-moved', '--data', d.dir]);
    assert.equal(dm.code, 0, dm.stderr);
    assert.match(dm.stdout, /dropped 4 file\(s\) of shards 0\.\.3 from MySQL001A/);
    for (let s = 0; s <= 3; s++) assert.equal(existsSync(file(d, 'MySQL001A', s)), false);
    assert.ok(existsSync(file(d, 'MySQL001A', 4)), 'shards that stayed keep their files');
    assert.equal((JSON.parse(topologyText(d)) as { moves?: unknown }).moves, undefined);
    await readAll(d);
    assert.match((await cli(['shards', 'drop-moved', '--data', d.dir])).stdout, /no switched moves/);
  } finally {
    d.cleanup();
  }
});

test('shards verify: clean copies exit 0; a row changed by hand on the target is named with its table and key range (exit 3)', async () => {
  const d = await dataDir();
  try {
    // Stop after the fence and copy ran, before the switch: resume does it; here verify compares both copies.
    const r = await cli(['shards', 'move', '4..5', '--to', 'MySQL002A', '--data', d.dir, '--json']);
    assert.equal(r.code, 0, r.stderr);
    const clean = await cli(['shards', 'verify', '4..5', '--data', d.dir, '--json']);
    assert.equal(clean.code, 0, clean.stdout + clean.stderr);
    const report = JSON.parse(clean.stdout) as { shards: number; rows: number; mismatches: unknown[] };
    assert.equal(report.shards, 2);
    assert.equal(report.rows, 2 * (1 + 5 + 5));
    const db = new Database(file(d, 'MySQL002A', 5));
    db.prepare("UPDATE pins SET data = '{\"s\":5,\"i\":99}' WHERE local_id = 3").run();
    db.close();
    const bad = await cli(['shards', 'verify', '4..5', '--data', d.dir]);
    assert.equal(bad.code, 3);
    assert.match(bad.stdout, /MISMATCH shard 5 pins keys -inf\.\.5: 5 row\(s\) on the source, 5 on the other copy/);
    assert.doesNotMatch(bad.stdout, /shard 4/);
  } finally {
    d.cleanup();
  }
});

test('shards move --config alone: the data (topology store, shard files) is the config file\'s directory, not ./data (#28)', async () => {
  const d = await dataDir();
  try {
    const r = await cli(['shards', 'move', '4..5', '--to', 'MySQL002A', '--config', join(d.dir, 'shardkit.json'), '--json']);
    assert.equal(r.code, 0, r.stderr);
    const map = JSON.parse(topologyText(d)) as { ranges: Array<{ range: [number, number]; master: string }> };
    assert.ok(map.ranges.some((x) => x.range[0] === 4 && x.range[1] === 5 && x.master === 'MySQL002A'), topologyText(d));
    for (let s = 4; s <= 5; s++) assert.ok(existsSync(file(d, 'MySQL002A', s)));
    await readAll(d, true);
  } finally {
    d.cleanup();
  }
});

test('bad input: one line, exit 2, and the topology is unchanged', async () => {
  const d = await dataDir();
  try {
    // Seed the store as a service would.
    assert.equal((await cli(['shards', 'drop-moved', '--data', d.dir])).code, 0);
    const before = topologyText(d);
    const cases: Array<[string[], RegExp]> = [
      [['0..9', '--to', 'MySQL002A'], /cross a range boundary/],
      [['0..3', '--to', 'Nope01'], /unknown host Nope01/],
      [['0..3', '--to', 'MySQL001A'], /is a host of the source pair/],
      [['0..3', '--to', 'MySQL001B'], /is a host of the source pair/],
      [['0..3', '--resume'], /UNKNOWN_MOVE: no move of shards 0\.\.3/],
      [['0..3', '--abort'], /UNKNOWN_MOVE/],
      [['0..3'], /needs --to/],
      [['3..0', '--to', 'MySQL002A'], /reversed/],
      [['0..3', '--to', 'MySQL002A', '--hold-ms', '0'], /--hold-ms/],
      [['0..3', '--to', 'MySQL002A', '--max-rate', '0'], /--max-rate/],
      [['0..3', '--to', 'MySQL002A', '--max-rate', 'fast'], /--max-rate/],
      [['0..3', '--to', 'MySQL002A', '--max-source-lag', 'soon'], /--max-source-lag must be/],
      [['0..3', '--to', 'MySQL002A', '--copy-streams', '0'], /--copy-streams/],
      [['0..3', '--to', 'MySQL002A', '--copy-streams', '17'], /--copy-streams/],
      [['0..3', '--resume', '--abort'], /not both/],
    ];
    for (const [args, pattern] of cases) assertBadInput(await cli(['shards', 'move', ...args, '--data', d.dir]), args.join(' '), pattern);
    assert.equal(topologyText(d), before);
    assertBadInput(await cli(['shards', 'verify', '0..99', '--data', d.dir]), 'verify past the map', /UNKNOWN_SHARD/);
    assertBadInput(await cli(['shards', 'move', '0..3', '--to', 'MySQL002A', '--data', d.dir, '--dir', d.dir]), '--dir and --data', /not both/);
    assertBadInput(await cli(['shards', 'move', '0..3', '--to', 'MySQL002A', '--dir', d.dir]), '--dir without a dev cluster', /no dev cluster in/);
    assert.equal(topologyText(d), before);
  } finally {
    d.cleanup();
  }
});

/** Runs the mover until it has recorded `phase`, then kills it with SIGKILL. */
const killAfter = (d: Data, phase: string): Promise<void> => killMoverAfter(phase, ['0..3', '--to', 'MySQL002A', '--data', d.dir, '--json']);

for (const phase of ['copied', 'frozen', 'fenced']) {
  test(`kill -9 of the mover after ${phase}: a map edit is refused, then --resume completes and --abort restores`, async () => {
    for (const then of ['--resume', '--abort'] as const) {
      const d = await dataDir();
      try {
        await killAfter(d, phase);
        const map = JSON.parse(topologyText(d)) as { moves: Array<{ phase: string }> };
        assert.equal(map.moves[0]!.phase, phase);
        const split = await cli(['topology', 'split', '0..1', '--master', 'MySQL002A', '--file', join(d.dir, 'shardkit.json')]);
        assertBadInput(split, 'split during a move', /SHARD_FROZEN/);
        const r = await cli(['shards', 'move', '0..3', then, '--data', d.dir, '--json']);
        assert.equal(r.code, 0, r.stderr);
        const outcome = (JSON.parse(r.stdout.trim().split('\n').at(-1)!) as { outcome: string }).outcome;
        const after = JSON.parse(topologyText(d)) as { ranges: Array<{ range: [number, number]; master: string; frozen?: unknown }>; moves?: Array<{ phase: string }> };
        if (then === '--resume') {
          assert.equal(outcome, 'switched');
          assert.equal(after.ranges[0]!.master, 'MySQL002A');
        } else {
          assert.equal(outcome, 'aborted');
          assert.deepEqual(after.ranges.map((x) => [x.range, x.master]), [[[0, 7], 'MySQL001A'], [[8, 15], 'MySQL002A']]);
          assert.equal(after.moves, undefined);
          for (let s = 0; s <= 3; s++) assert.equal(existsSync(file(d, 'MySQL002A', s)), false);
        }
        assert.ok(after.ranges.every((x) => x.frozen === undefined));
        await readAll(d, true);
      } finally {
        d.cleanup();
      }
    }
  });
}
