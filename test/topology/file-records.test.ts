/**
 * The file store's record layout (#30, src/topology/file/file-map-records.ts): a one-shard switch
 * adds only the changed records' files and a new root, and another instance's watcher follows it;
 * a writer that died before renaming the root leaves the map as it was; a record file edited by
 * hand is INVALID_CONFIG naming it and is never overwritten by a reader; a single-document file is
 * upgraded in place at the same version, keeping a copy, idempotently.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileTopologyStore, ShardKitError, ShardMap, type ShardMapJson } from '../../src/index.js';
import { defaultConfig } from '../../src/config/config.js';
import { cli } from '../cli/cli-harness.js';
import { evenRanges } from '../../src/topology/shard-map.js';

const dirs: string[] = [];
after(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function tempPath(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'shardkit-file-records-'));
  dirs.push(dir);
  return join(dir, 'topology.json');
}

/** 256 shards on 32 pairs (fr01..fr32). */
function map32(): ShardMapJson {
  return {
    version: 0,
    ranges: evenRanges(256, 32, (i, role) => `fr${String(i).padStart(2, '0')}${role === 'master' ? 'a' : 'b'}`, true),
    modShards: { count: 8, ranges: evenRanges(8, 2, (i, role) => `frmod${i}${role[0]}`) },
  };
}

/** Shard 0 from fr01 to fr02. */
function switchShard0(map: ShardMap): ShardMap {
  const json = map.toJSON();
  const [first, ...rest] = json.ranges;
  return ShardMap.fromJSON({ ...json, ranges: [{ ...first!, range: [0, 0], master: 'fr02a', slave: 'fr02b' }, { ...first!, range: [1, first!.range[1]] }, ...rest] });
}

async function codeOf(p: Promise<unknown>): Promise<{ code: string; message: string }> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof ShardKitError, String(err));
    return { code: err.code, message: err.message };
  }
  assert.fail('expected an error');
}

test('file records: a one-shard switch writes two record files and the root; a watcher in another instance gets the new map', async () => {
  const path = await tempPath();
  const writer = new FileTopologyStore({ path, layout: 2 });
  const service = new FileTopologyStore({ path, pollIntervalMs: 50 });
  const v1 = await writer.write(ShardMap.fromJSON(map32()), 0);
  const root = JSON.parse(await readFile(path, 'utf8')) as { layout: number; records: number; files: Record<string, string> };
  assert.equal(root.layout, 2);
  assert.equal(root.records, 33, '32 pairs and the mod fleet');
  const before = new Set(await readdir(`${path}.records`));
  assert.equal(before.size, 33);
  assert.deepEqual((await service.read())!.toJSON(), v1.toJSON());
  const heard: ShardMap[] = [];
  service.watch((m) => heard.push(m));
  const v2 = await writer.write(switchShard0(v1), 1);
  const added = (await readdir(`${path}.records`)).filter((f) => !before.has(f)).sort();
  assert.deepEqual(added.map((f) => f.split('.')[0]), ['pair~fr01a', 'pair~fr02a']);
  while (heard.length === 0) await new Promise((r) => setTimeout(r, 20));
  assert.equal(heard[0]!.version, 2);
  assert.deepEqual(heard[0]!.toJSON(), v2.toJSON());
  assert.equal(heard[0]!.locate(0).master, 'fr02a');
  // The next write collects the files named by neither of the last two roots: fr01a's first record.
  const json = v2.toJSON();
  const moved = ShardMap.fromJSON({ ...json, ranges: json.ranges.map((r) => (r.range[0] === 0 ? { ...r, master: 'fr03a', slave: 'fr03b' } : r)) });
  await writer.write(moved, 2);
  const files = await readdir(`${path}.records`);
  assert.ok(!files.includes(`pair~fr01a.${root.files['pair/fr01a']}.json`), 'a record only the root before last named is collected');
  assert.ok(files.includes(`pair~fr02a.${root.files['pair/fr02a']}.json`), 'a record the new root names again is kept');
  await writer.close();
  await service.close();
});

test('file records: record files a dead writer left without renaming the root change nothing; the next write collects them', async () => {
  const path = await tempPath();
  const writer = new FileTopologyStore({ path, layout: 2 });
  const v1 = await writer.write(ShardMap.fromJSON(map32()), 0);
  await writeFile(join(`${path}.records`, 'pair~fr01a.00000000deadbeef.json'), '[[0,7,"x",1]]');
  const reader = new FileTopologyStore({ path });
  assert.deepEqual((await reader.read())!.toJSON(), v1.toJSON());
  await writer.write(switchShard0(v1), 1);
  assert.ok(!(await readdir(`${path}.records`)).includes('pair~fr01a.00000000deadbeef.json'));
  await writer.close();
  await reader.close();
});

test('file records: a record file edited by hand is INVALID_CONFIG naming it, and neither a reader nor a writer overwrites it', async () => {
  const path = await tempPath();
  const writer = new FileTopologyStore({ path, layout: 2 });
  await writer.write(ShardMap.fromJSON(map32()), 0);
  const root = JSON.parse(await readFile(path, 'utf8')) as { files: Record<string, string> };
  const file = join(`${path}.records`, `pair~fr05a.${root.files['pair/fr05a']}.json`);
  await writeFile(file, '[[32,39,"fr05b",1],[40,47,"fr05b",1]]');
  const reader = new FileTopologyStore({ path });
  const err = await codeOf(reader.read());
  assert.equal(err.code, 'INVALID_CONFIG');
  assert.ok(err.message.includes(file), err.message);
  assert.equal((await codeOf(writer.write(ShardMap.fromJSON(map32()), 1))).code, 'INVALID_CONFIG');
  assert.equal(await readFile(file, 'utf8'), '[[32,39,"fr05b",1],[40,47,"fr05b",1]]');
  await writer.close();
  await reader.close();
});

test('file records: upgrade converts a single document in place at the same version, keeps a copy, and is idempotent', async () => {
  const path = await tempPath();
  const old = new FileTopologyStore({ path });
  const v3 = await old.write(ShardMap.fromJSON({ ...map32(), version: 0 }), 0);
  const docText = await readFile(path, 'utf8');
  const out = await old.upgrade();
  assert.deepEqual(out, { upgraded: true, layout: 2, version: 1, records: 33, copyPath: `${path}.v1-copy` });
  assert.equal(await readFile(`${path}.v1-copy`, 'utf8'), docText);
  const fresh = new FileTopologyStore({ path });
  assert.deepEqual((await fresh.read())!.toJSON(), v3.toJSON());
  assert.deepEqual(await fresh.upgrade(), { upgraded: false, layout: 2, version: 1, records: 33 });
  // Writers keep the record layout from now on, whatever layout they would create.
  await fresh.write(switchShard0(v3), 1);
  assert.equal((JSON.parse(await readFile(path, 'utf8')) as { layout?: number }).layout, 2);
  await old.close();
  await fresh.close();
});

test('shardkit topology upgrade on a config\'s file store: converts it, says what it did, keeps the old document; a second run does nothing; a service reading the old layout refuses the new one', async () => {
  const path = await tempPath();
  const dir = join(path, '..');
  const config = join(dir, 'shardkit.json');
  await writeFile(config, JSON.stringify(defaultConfig({ shards: 16, pairs: 2 })));
  const old = new FileTopologyStore({ path, layout: 1 });
  const v1 = await old.write(ShardMap.fromJSON(map32()), 0);
  const docText = await readFile(path, 'utf8');
  await old.close();
  const help = await cli(['topology', 'upgrade', '--help']);
  assert.match(help.stdout, /etcd or file/);
  const first = await cli(['topology', 'upgrade', '--file', config]);
  assert.equal(first.code, 0, first.stderr);
  assert.equal(first.stdout, `upgraded topology file ${path} to the record layout: shard map version 1 in 33 records; the old document is kept at ${path}.v1-copy\n`);
  assert.equal(await readFile(`${path}.v1-copy`, 'utf8'), docText);
  const rootText = await readFile(path, 'utf8');
  assert.equal((JSON.parse(rootText) as { layout: number }).layout, 2);
  const again = await cli(['topology', 'upgrade', '--file', config, '--json']);
  assert.equal(again.code, 0, again.stderr);
  assert.deepEqual(JSON.parse(again.stdout), { upgraded: false, layout: 2, version: 1, records: 33 });
  // The topology file itself as --file: the same store, nothing left to do.
  const direct = await cli(['topology', 'upgrade', '--file', path]);
  assert.equal(direct.stdout, `topology file ${path} is already in the record layout (shard map version 1, 33 records): nothing to do\n`);
  assert.deepEqual((await new FileTopologyStore({ path }).read())!.toJSON(), v1.toJSON());
  // A service of the old layout parses the stored document as a whole map: the root is refused as
  // INVALID_CONFIG (it never routes by it), which is what an older shardkit does at start.
  assert.throws(() => ShardMap.fromJSON(JSON.parse(rootText)), (err: ShardKitError) => err.code === 'INVALID_CONFIG' && /invalid shard map/.test(err.message));
  // A store that lives in one process has nothing to upgrade: one line, non-zero exit.
  const memoryConfig = join(dir, 'memory.json');
  await writeFile(memoryConfig, JSON.stringify({ ...defaultConfig({ shards: 16, pairs: 2 }), topologyStore: { kind: 'memory' } }));
  const refused = await cli(['topology', 'upgrade', '--file', memoryConfig]);
  assert.notEqual(refused.code, 0);
  assert.equal(refused.stderr.trim().split('\n').length, 1, refused.stderr);
  assert.match(refused.stderr, /"memory" topology store/);
});
