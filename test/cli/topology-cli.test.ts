import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultConfig, defaultShardMapJson, FileTopologyStore, ShardMap, type ShardMapJson } from '../../src/index.js';
import { assertBadInput, cli, ensureBuilt } from './cli-harness.js';

let dir: string;
before(async () => {
  ensureBuilt();
  dir = await mkdtemp(join(tmpdir(), 'shardkit-topo-cli-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

const custom: ShardMapJson = {
  version: 7,
  ranges: [
    { range: [0, 1023], master: 'db-a1', slave: 'db-a2', open: false },
    { range: [1024, 1024], master: 'db-b1', open: true },
    { range: [1025, 2047], master: 'db-c1', slave: 'db-c2', open: true },
  ],
  modShards: { count: 64, ranges: [{ range: [0, 31], master: 'mod-1' }, { range: [32, 63], master: 'mod-2', slave: 'mod-3' }] },
};

test('topology show --json without --file prints the default map\'s JSON form exactly', async () => {
  const r = await cli(['topology', 'show', '--json']);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), defaultShardMapJson());
  assert.ok(r.stdout.startsWith('{"version":1,"ranges":[{"range":[0,511],"master":"MySQL001A","slave":"MySQL001B","open":true},'));
});

test('topology show prints a table: range, master, slave, open; then the mod-shard fleet', async () => {
  const r = await cli(['topology', 'show']);
  assert.equal(r.code, 0, r.stderr);
  const lines = r.stdout.split('\n');
  const header = lines.findIndex((l) => /^RANGE\s+MASTER\s+SLAVE\s+OPEN$/.test(l));
  assert.ok(header >= 0, r.stdout);
  assert.match(lines[header + 1]!, /^0\.\.511\s+MySQL001A\s+MySQL001B\s+yes$/);
  assert.match(lines[header + 8]!, /^3584\.\.4095\s+MySQL008A\s+MySQL008B\s+yes$/);
  const modHeader = lines.findIndex((l) => /^RANGE\s+MASTER\s+SLAVE$/.test(l));
  assert.ok(modHeader > header);
  assert.match(lines[modHeader + 1]!, /^0\.\.511\s+msdb001a\s+msdb001b$/);
  assert.match(r.stdout, /4096 mod shards/);
});

test('topology show --file reads a topology file (e.g. the file store\'s) and shows closed ranges and missing slaves', async () => {
  const path = join(dir, 'topology.json');
  const store = new FileTopologyStore({ path });
  await store.write(ShardMap.fromJSON(custom), 0);
  await store.close();
  const [json, text] = await Promise.all([cli(['topology', 'show', '--file', path, '--json']), cli(['topology', 'show', '--file', path])]);
  assert.equal(json.code, 0, json.stderr);
  assert.deepEqual(JSON.parse(json.stdout), { ...custom, version: 1 });
  assert.equal(text.code, 0, text.stderr);
  assert.match(text.stdout, /^0\.\.1023\s+db-a1\s+db-a2\s+no$/m);
  assert.match(text.stdout, /^1024\s+db-b1\s+-\s+yes$/m);
  assert.match(text.stdout, /^0\.\.31\s+mod-1\s+-$/m);
  assert.match(text.stdout, /2048 object shards \(1024 open\)/);
});

test('topology show --file reads the shardMap of a full config file (no topology store written yet)', async () => {
  const config = defaultConfig({ shards: 16, pairs: 2 });
  const path = join(await mkdtemp(join(dir, 'seed-')), 'shardkit.json');
  await writeFile(path, JSON.stringify(config));
  const r = await cli(['topology', 'show', '--file', path, '--json']);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), config.shardMap);
});

test('topology show --file <config> shows the live map of its topology store once one exists', async () => {
  const sub = await mkdtemp(join(dir, 'live-'));
  const config = defaultConfig({ shards: 16, pairs: 2 });
  const path = join(sub, 'shardkit.json');
  await writeFile(path, JSON.stringify(config));
  // As a service would: the store is seeded from the config, then an operator closes shards 0-7.
  const store = new FileTopologyStore({ path: join(sub, 'topology.json') });
  const seed = await store.write(ShardMap.fromJSON(config.shardMap), 0);
  const closed = { ...seed.toJSON(), ranges: seed.toJSON().ranges.map((r) => (r.range[0] === 0 ? { ...r, open: false } : r)) };
  const live = await store.write(ShardMap.fromJSON(closed), seed.version);
  await store.close();
  const r = await cli(['topology', 'show', '--file', path, '--json']);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), live.toJSON());
  assert.equal(JSON.parse(r.stdout).ranges[0].open, false);
  // --data names another data dir (here: one without a store), which falls back to the seed.
  const other = await mkdtemp(join(dir, 'other-'));
  const r2 = await cli(['topology', 'show', '--file', path, '--data', other, '--json']);
  assert.equal(r2.code, 0, r2.stderr);
  assert.deepEqual(JSON.parse(r2.stdout), config.shardMap);
});

test('topology show: bad files exit 2 with one line naming the problem', async () => {
  const write = async (name: string, content: string): Promise<string> => {
    const p = join(dir, name);
    await writeFile(p, content);
    return p;
  };
  const overlap = await write('overlap.json', JSON.stringify({ ...custom, ranges: [{ range: [0, 10], master: 'a' }, { range: [5, 20], master: 'b' }] }));
  const big = await write('big.json', JSON.stringify({ ...custom, ranges: [{ range: [0, 65536], master: 'a' }] }));
  const notJson = await write('broken.json', '{"version": 1, ');
  const badConfig = await write('badconfig.json', JSON.stringify({ ...defaultConfig({ shards: 16, pairs: 2 }), hosts: { MySQL001A: {} } }));
  const cases: Array<[string[], RegExp]> = [
    [['--file', join(dir, 'missing.json')], /cannot read/],
    [['--file', overlap], /INVALID_CONFIG.*overlaps/],
    [['--file', big], /INVALID_CONFIG.*65535/],
    [['--file', notJson], /INVALID_CONFIG.*not valid JSON/],
    [['--file', badConfig], /INVALID_CONFIG.*not declared/],
    [['--file'], /argument missing/],
    [['--bogus'], /unknown option/],
  ];
  await Promise.all(cases.map(async ([args, pattern]) => assertBadInput(await cli(['topology', 'show', ...args]), args.join(' '), pattern)));
});

test('topology show at moon size (65,536 shards, 1,000 pairs, fragmented): one row per master, --ranges lists every range', async () => {
  const owner = (s: number) => (s % 97 === 0 ? (s % 1000) + 1 : Math.floor((s * 1000) / 65_536) + 1);
  const name = (i: number, r: string) => `db${String(i).padStart(4, '0')}${r}`;
  const ranges: ShardMapJson['ranges'] = [];
  for (let s = 0; s < 65_536;) {
    let e = s;
    while (e + 1 < 65_536 && owner(e + 1) === owner(s)) e++;
    ranges.push({ range: [s, e], master: name(owner(s), 'a'), slave: name(owner(s), 'b'), open: true });
    s = e + 1;
  }
  const file = join(dir, 'moon.json');
  await writeFile(file, JSON.stringify({ ...defaultShardMapJson(), ranges }));
  const summary = await cli(['topology', 'show', '--file', file]);
  assert.equal(summary.code, 0, summary.stderr);
  const lines = summary.stdout.split('\n');
  assert.match(lines[0]!, new RegExp(`^shard map version 1: 65536 object shards \\(65536 open\\) on ${ranges.length} ranges`));
  assert.match(lines[2]!, /^MASTER\s+SLAVE\s+RANGES\s+SHARDS\s+OPEN\s+FIRST\.\.LAST\s+FROZEN/);
  const rows = lines.filter((l) => /^db\d{4}a\s/.test(l));
  assert.equal(rows.length, 1000, 'one row per master');
  // Every shard is counted once, on its master.
  assert.equal(rows.reduce((sum, l) => sum + Number(l.split(/\s+/)[3]), 0), 65_536);
  assert.ok(summary.stdout.includes(`(${ranges.length} ranges summed up by master; --ranges lists each)`));
  const all = await cli(['topology', 'show', '--file', file, '--ranges']);
  assert.equal(all.stdout.split('\n').filter((l) => /^\d+(\.\.\d+)?\s+db\d{4}a\s/.test(l)).length, ranges.length);
});
