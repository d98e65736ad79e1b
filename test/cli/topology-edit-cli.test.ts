import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultConfig, FileTopologyStore, ShardKit, ShardMap, type ShardMapJson } from '../../src/index.js';
import { assertBadInput, cli, ensureBuilt } from './cli-harness.js';

let dir: string;
before(async () => {
  ensureBuilt();
  dir = await mkdtemp(join(tmpdir(), 'shardkit-topo-edit-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** 16 shards over MySQL001A/B, MySQL002A/B; MySQL009A/B declared for growing. */
function config() {
  const c = defaultConfig({ shards: 16, pairs: 2 });
  return { ...c, hosts: { ...c.hosts, MySQL009A: {}, MySQL009B: {} } };
}

/** A data dir with shardkit.json and, unless `empty`, its file store seeded as a service would. */
async function dataDir(options: { empty?: boolean } = {}): Promise<{ dir: string; cfg: string; topo: string }> {
  const d = await mkdtemp(join(dir, 'data-'));
  const cfg = join(d, 'shardkit.json');
  const c = config();
  await writeFile(cfg, JSON.stringify(c));
  const topo = join(d, 'topology.json');
  if (!options.empty) {
    const store = new FileTopologyStore({ path: topo });
    await store.write(ShardMap.fromJSON(c.shardMap), 0);
    await store.close();
  }
  return { dir: d, cfg, topo };
}

async function live(topo: string): Promise<ShardMapJson> {
  return JSON.parse(await readFile(topo, 'utf8')) as ShardMapJson;
}

test('topology promote: the slave becomes master of every range the host mastered (object and mod shards), the host its slave', async () => {
  const d = await dataDir();
  const r = await cli(['topology', 'promote', 'MySQL001A', '--file', d.cfg]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, 'object shards 0..7: MySQL001A/MySQL001B open -> MySQL001B/MySQL001A open\nwrote shard map version 2 (was 1)\n');
  const map = await live(d.topo);
  assert.equal(map.version, 2);
  assert.deepEqual(map.ranges[0], { range: [0, 7], master: 'MySQL001B', slave: 'MySQL001A', open: true });
  const mod = await cli(['topology', 'promote', 'msdb002a', '--file', d.cfg, '--drop-old-master']);
  assert.equal(mod.code, 0, mod.stderr);
  assert.match(mod.stdout, /^mod shards 2048\.\.4095: msdb002a\/msdb002b -> msdb002b\/-$/m);
  assert.deepEqual((await live(d.topo)).modShards.ranges[1], { range: [2048, 4095], master: 'msdb002b' });
});

test('topology split moves a span to the new pair, splitting its range into three; --mod splits mod shards', async () => {
  const d = await dataDir();
  const r = await cli(['topology', 'split', '2..5', '--master', 'MySQL009A', '--slave', 'MySQL009B', '--file', d.cfg]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^object shards 2\.\.5: MySQL001A\/MySQL001B open -> MySQL009A\/MySQL009B open$/m);
  assert.deepEqual((await live(d.topo)).ranges.map((x) => [x.range, x.master]), [[[0, 1], 'MySQL001A'], [[2, 5], 'MySQL009A'], [[6, 7], 'MySQL001A'], [[8, 15], 'MySQL002A']]);
  const mod = await cli(['topology', 'split', '0..1023', '--mod', '--master', 'MySQL009A', '--file', d.cfg, '--json']);
  assert.equal(mod.code, 0, mod.stderr);
  const printed = JSON.parse(mod.stdout) as ShardMapJson;
  assert.deepEqual(printed, await live(d.topo));
  assert.equal(printed.version, 3);
  assert.deepEqual(printed.modShards.ranges[0], { range: [0, 1023], master: 'MySQL009A' });
});

test('topology close/open: split ranges as needed, merge them back; open past the end adds shards on --master/--slave', async () => {
  const d = await dataDir();
  const closed = await cli(['topology', 'close', '4..11', '--file', d.cfg]);
  assert.equal(closed.code, 0, closed.stderr);
  assert.equal(closed.stdout, [
    'object shards 4..7: MySQL001A/MySQL001B open -> MySQL001A/MySQL001B closed',
    'object shards 8..11: MySQL002A/MySQL002B open -> MySQL002A/MySQL002B closed',
    'wrote shard map version 2 (was 1)', '',
  ].join('\n'));
  assert.equal((await live(d.topo)).ranges.length, 4);
  const reopened = await cli(['topology', 'open', '4..11', '--file', d.cfg]);
  assert.equal(reopened.code, 0, reopened.stderr);
  assert.deepEqual((await live(d.topo)).ranges, config().shardMap.ranges);
  const grown = await cli(['topology', 'open', '16..31', '--master', 'MySQL009A', '--slave', 'MySQL009B', '--file', d.cfg]);
  assert.equal(grown.code, 0, grown.stderr);
  assert.match(grown.stdout, /^object shards 16\.\.31: \(none\) -> MySQL009A\/MySQL009B open$/m);
  // Open before they exist: the operator is told to init, and how to add them without that window.
  assert.match(grown.stderr, /^next: shardkit init \(it creates shards 16\.\.31 on MySQL009A\); until then, new objects that running services place there fail with SHARD_UNAVAILABLE\. Without that window: topology close 16\.\.31 --master MySQL009A --slave MySQL009B, then init, then topology open 16\.\.31$/m);
  const map = ShardMap.fromJSON(await live(d.topo));
  assert.equal(map.shardCount, 32);
  assert.equal(map.openShardCount, 32);
  // Added closed: in the map, not open for new objects until `topology open`.
  const added = await cli(['topology', 'close', '32..47', '--master', 'MySQL009A', '--slave', 'MySQL009B', '--file', d.cfg]);
  assert.equal(added.code, 0, added.stderr);
  assert.match(added.stderr, /^next: shardkit init \(it creates shards 32\.\.47 on MySQL009A\), then topology open 32\.\.47$/m);
  assert.deepEqual([ShardMap.fromJSON(await live(d.topo)).shardCount, ShardMap.fromJSON(await live(d.topo)).openShardCount], [48, 32]);
  assert.equal((await cli(['topology', 'open', '32..47', '--file', d.cfg])).code, 0);
  // A span reaching past the end: only the shards past the old end are new, and the hint says so.
  const past = await cli(['topology', 'open', '40..55', '--master', 'MySQL009A', '--slave', 'MySQL009B', '--file', d.cfg]);
  assert.equal(past.code, 0, past.stderr);
  assert.match(past.stderr, /^next: shardkit init \(it creates shards 48\.\.55 on MySQL009A\);/m);
  assert.equal(ShardMap.fromJSON(await live(d.topo)).shardCount, 56);
  // Re-running is a no-op: nothing written.
  const again = await cli(['topology', 'open', '4..11', '--file', d.cfg]);
  assert.equal(again.stdout, 'no change\nnothing written (the map stays at version 7)\n');
  assert.equal((await live(d.topo)).version, 7);
});

test('topology edits: --dry-run prints the change and writes nothing; --data names the data dir; an empty store is seeded from the config', async () => {
  const d = await dataDir();
  const bytes = await readFile(d.topo, 'utf8');
  const r = await cli(['topology', 'promote', 'MySQL002A', '--file', d.cfg, '--dry-run']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, 'object shards 8..15: MySQL002A/MySQL002B open -> MySQL002B/MySQL002A open\ndry run: nothing written (the map is at version 1)\n');
  const j = await cli(['topology', 'close', '0..15', '--file', d.cfg, '--dry-run', '--json']);
  assert.equal(j.code, 0, j.stderr);
  assert.equal(ShardMap.fromJSON(JSON.parse(j.stdout)).openShardCount, 0);
  assert.equal(await readFile(d.topo, 'utf8'), bytes);

  const elsewhere = await dataDir({ empty: true });
  const s = await cli(['topology', 'close', '0..7', '--file', d.cfg, '--data', elsewhere.dir]);
  assert.equal(s.code, 0, s.stderr);
  assert.match(s.stdout, /wrote shard map version 1 \(was the config's seed: the store was empty\)/);
  assert.equal((await live(elsewhere.topo)).ranges[0]!.open, false);
  assert.equal(await readFile(d.topo, 'utf8'), bytes);
});

test('topology edits: bad input exits 2 with one line naming the problem, and the store is unchanged', async () => {
  const d = await dataDir();
  // A range without a slave, to refuse promoting it.
  assert.equal((await cli(['topology', 'split', '15', '--master', 'MySQL009A', '--file', d.cfg])).code, 0);
  const bytes = await readFile(d.topo, 'utf8');
  const f = ['--file', d.cfg];
  const cases: Array<[string[], RegExp]> = [
    [['split', '7..4', '--master', 'MySQL009A', ...f], /INVALID_ARGUMENT: shard range 7\.\.4 is reversed/],
    [['open', '0..65536', '--master', 'MySQL009A', ...f], /INVALID_ARGUMENT: .*past 65535/],
    [['split', '0..3', '--master', 'NewHost01', ...f], /INVALID_ARGUMENT: host NewHost01 is not declared in "hosts" of .*shardkit\.json: add "NewHost01": \{\} there/],
    [['split', '6..9', '--master', 'MySQL009A', ...f], /INVALID_ARGUMENT: object shards 6\.\.9 span two ranges/],
    [['split', '0..1', '--master', 'MySQL009A', '--slave', 'MySQL009A', ...f], /must be different hosts/],
    [['split', '0..1', ...f], /needs --master/],
    [['split', '14..16', '--master', 'MySQL009A', ...f], /past the last shard of the map, 15/],
    [['promote', 'MySQL001B', ...f], /INVALID_ARGUMENT: host MySQL001B is master of no range/],
    [['promote', 'MySQL009A', ...f], /INVALID_ARGUMENT: host MySQL009A has no slave to promote for object shards 15/],
    [['open', '16..31', ...f], /adding shards needs --master/],
    [['open', '20..31', '--master', 'MySQL009A', ...f], /16\.\.19 would be left uncovered/],
    [['close', 'x..y', ...f], /first\.\.last/],
    [['close', '0..3'], /--file <config> is required/],
    [['close', '0..3', '--file', join(dir, 'missing.json')], /cannot read/],
  ];
  for (const [args, pattern] of cases) {
    assertBadInput(await cli(['topology', ...args]), args.join(' '), pattern);
  }
  assert.equal(await readFile(d.topo, 'utf8'), bytes);
});

test('topology split reaches a running ShardKit on the same data dir without reopening: shard 5 goes to the new host', async () => {
  const d = await dataDir();
  const kit = await ShardKit.open({ configPath: d.cfg });
  try {
    await kit.ready();
    const before = await kit.objects.create('pin', { n: 1 }, { shard: 5 });
    assert.ok(existsSync(join(d.dir, 'hosts', 'MySQL001A', 'db00005.sqlite')));
    const changed = once(kit.events, 'topology');
    const r = await cli(['topology', 'split', '4..7', '--master', 'MySQL009A', '--slave', 'MySQL009B', '--file', d.cfg]);
    assert.equal(r.code, 0, r.stderr);
    // The kit's watcher does not keep the process alive (by design) and the command ran in this
    // process: a timer does, until the watcher has heard the change.
    const alive = setInterval(() => {}, 1000);
    const [map] = (await changed.finally(() => clearInterval(alive))) as [ShardMap];
    assert.equal(map.version, 2);
    assert.equal((await kit.shardMap()).locate(5).master, 'MySQL009A');
    const moved = await kit.objects.create('pin', { n: 2 }, { shard: 5 });
    assert.ok(existsSync(join(d.dir, 'hosts', 'MySQL009A', 'db00005.sqlite')));
    // Nothing was replicated to the new host in this test, so its shard 5 starts afresh and hands
    // out the same first ID: reading it returns the new host's object, not the old one.
    assert.equal(moved.id, before.id);
    assert.deepEqual((await kit.objects.get(before.id)).data, { n: 2 });
  } finally {
    await kit.close();
  }
});

test('topology edits on a topology file itself (no config): that file is the store, no hosts to check', async () => {
  const d = await dataDir();
  const r = await cli(['topology', 'split', '8..9', '--master', 'anyhost', '--file', d.topo]);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual((await live(d.topo)).ranges[1], { range: [8, 9], master: 'anyhost', open: true });
  assertBadInput(await cli(['topology', 'close', '0..1', '--file', d.topo, '--data', d.dir]), '--data with a topology file', /--data only applies to a config file/);
});

test('topology promote/split/open/close --help: what it does and an example', async () => {
  for (const name of ['promote', 'split', 'open', 'close']) {
    const r = await cli(['topology', name, '--help']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`\\$ shardkit topology ${name} .*--file shardkit\\.json`), name);
    assert.match(r.stdout, /--dry-run/, name);
  }
});
