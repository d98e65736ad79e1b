/**
 * The etcd store's record layout (#30, src/topology/etcd/etcd-map-records.ts) on a real etcd: a
 * one-shard switch rewrites only the root and the records it changes, and a watcher receives
 * only those; a bad record is INVALID_CONFIG naming it and is never overwritten by a reader;
 * a single-document map is read as before and upgraded in place, keeping a copy.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Etcd3, type IKeyValue } from 'etcd3';
import { EtcdMapKeys, RecordWatchState } from '../../src/topology/etcd/etcd-map-records.js';
import { EtcdTopologyStore, ShardKitError, ShardMap, type ShardMapJson } from '../../src/index.js';
import { evenRanges } from '../../src/topology/shard-map.js';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultConfig } from '../../src/config/config.js';
import { CLI, cli, ensureBuilt } from '../cli/cli-harness.js';
import { LocalEtcd } from './etcd-server.js';

let etcd: LocalEtcd;
let n = 0;
const freshKey = (): string => `/shardkit-records/${process.pid}/${++n}/topology`;

before(async () => {
  etcd = await LocalEtcd.start();
});
after(async () => {
  await etcd?.destroy();
});

/** 1,024 shards on 128 pairs (p001..p128): more records than one transaction may carry. */
function bigMap(): ShardMapJson {
  return {
    version: 0,
    ranges: evenRanges(1024, 128, (i, role) => `p${String(i).padStart(3, '0')}${role === 'master' ? 'm' : 's'}`, true),
    modShards: { count: 16, ranges: evenRanges(16, 2, (i, role) => `x${i}${role[0]}`) },
  };
}

/** Shard 0 from p001 to p002: the one-shard switch of the benchmark. */
function switchShard0(map: ShardMap): ShardMap {
  const json = map.toJSON();
  const [first, ...rest] = json.ranges;
  const moved = { ...first!, range: [0, 0] as [number, number], master: 'p002m', slave: 'p002s' };
  return ShardMap.fromJSON({ ...json, ranges: [moved, { ...first!, range: [1, first!.range[1]] }, ...rest] });
}

async function keysUnder(raw: Etcd3, key: string): Promise<Map<string, { value: string; mod: string }>> {
  const res = await raw.getAll().inRange({ start: key, end: `${key}/~` }).exec();
  return new Map(res.kvs.map((kv) => [kv.key.toString(), { value: kv.value.toString(), mod: kv.mod_revision }]));
}

test('records layout: a one-shard switch rewrites the root and two pair records, and a watcher receives only those', async () => {
  const key = freshKey();
  const writer = new EtcdTopologyStore({ endpoints: [etcd.endpoint], key });
  const service = new EtcdTopologyStore({ endpoints: [etcd.endpoint], key });
  const raw = new Etcd3({ hosts: etcd.endpoint });
  const watched: string[] = [];
  const rawWatch = await raw.watch().inRange({ start: key, end: `${key}/n` }).create();
  rawWatch.on('data', (res) => {
    for (const e of res.events) watched.push(e.kv.key.toString());
  });
  try {
    // 130 records (128 pairs, mod, nothing else) in a new generation, then the root.
    const first = await writer.write(ShardMap.fromJSON(bigMap()), 0);
    const root = JSON.parse((await raw.get(key).string())!) as { layout: number; version: number; gen: string; records: number };
    assert.deepEqual({ layout: root.layout, version: root.version, records: root.records }, { layout: 2, version: 1, records: 129 });
    assert.deepEqual((await service.read())!.toJSON(), first.toJSON());

    const seen: ShardMap[] = [];
    service.watch((m) => seen.push(m));
    // The watch is up once a write made now reaches it.
    const before = await keysUnder(raw, key);
    watched.length = 0;
    const next = await writer.write(switchShard0(first), 1);
    for (; seen.length === 0;) await new Promise((r) => setTimeout(r, 20));
    const after = await keysUnder(raw, key);
    const changed = [...after].filter(([k, v]) => before.get(k)?.mod !== v.mod).map(([k]) => k.slice(key.length)).sort();
    assert.deepEqual(changed, ['', `/m/${root.gen}/pair/p001m`, `/m/${root.gen}/pair/p002m`]);
    assert.deepEqual(watched.map((k) => k.slice(key.length)).sort(), changed, 'a watcher of the map receives only what changed');
    assert.deepEqual(seen.at(-1)!.toJSON(), next.toJSON());
    assert.equal(seen.at(-1)!.locate(0).master, 'p002m');
    assert.equal(seen.at(-1)!.locate(1).master, 'p001m');
  } finally {
    await rawWatch.cancel();
    raw.close();
    await writer.close();
    await service.close();
  }
});

test('records layout: a record that does not parse, a missing record, an overlap: INVALID_CONFIG naming the record, never overwritten', async () => {
  const key = freshKey();
  const store = new EtcdTopologyStore({ endpoints: [etcd.endpoint], key });
  const raw = new Etcd3({ hosts: etcd.endpoint });
  const invalid = async (pattern: RegExp) => {
    for (const call of [() => store.read(), () => store.write(ShardMap.fromJSON(bigMap()), 1)]) {
      const err = await call().then(() => undefined, (e: unknown) => e);
      assert.ok(err instanceof ShardKitError && err.code === 'INVALID_CONFIG', String(err));
      assert.match(err.message, pattern);
    }
  };
  try {
    await store.write(ShardMap.fromJSON(bigMap()), 0);
    const gen = (JSON.parse((await raw.get(key).string())!) as { gen: string }).gen;
    const p5 = `${key}/m/${gen}/pair/p005m`;
    const good = (await raw.get(p5).string())!;
    await raw.put(p5).value('[[32,39,"p005s",1');
    await invalid(new RegExp(`${p5.replace(/\//g, '\\/')} is not valid JSON`));
    assert.equal(await raw.get(p5).string(), '[[32,39,"p005s",1', 'the reader left the record as it was');
    await raw.put(p5).value('[[32,39,"p005s",1],[8,9,0,1]]');
    await invalid(/records .*pair\/p00[25]m.*overlaps|overlaps.*pair\/p00[25]m/);
    await raw.put(p5).value(good);
    await raw.delete().key(p5);
    await invalid(/names 129 records, 128 are stored/);
    await raw.put(p5).value(good);
    assert.equal((await store.read())!.locate(33).master, 'p005m');
  } finally {
    raw.close();
    await store.close();
  }
});

test('records layout: a single-document map is read as before; upgrade converts it in place at the same version, keeps a copy, and is idempotent', async () => {
  const key = freshKey();
  const old = new EtcdTopologyStore({ endpoints: [etcd.endpoint], key, layout: 1 });
  const store = new EtcdTopologyStore({ endpoints: [etcd.endpoint], key });
  const raw = new Etcd3({ hosts: etcd.endpoint });
  try {
    const v1 = await old.write(ShardMap.fromJSON(bigMap()), 0);
    const v2 = await store.write(switchShard0(v1), 1);
    const document = (await raw.get(key).string())!;
    assert.deepEqual(JSON.parse(document), v2.toJSON(), 'a store of the single-document layout keeps it on write');
    const out = await store.upgrade();
    assert.deepEqual(out, { upgraded: true, layout: 2, version: 2, copyKey: `${key}/v1-copy`, records: 129 });
    assert.equal(await raw.get(`${key}/v1-copy`).string(), document);
    assert.deepEqual((await old.read())!.toJSON(), v2.toJSON(), 'the same map, in records now');
    assert.deepEqual(await store.upgrade(), { upgraded: false, layout: 2, version: 2, records: 129 });
    // A service of the single-document layout cannot parse the root: it refuses, it does not misroute.
    const root = (await raw.get(key).string())!;
    assert.throws(() => ShardMap.fromJSON(JSON.parse(root)), (err: ShardKitError) => err.code === 'INVALID_CONFIG');
    assert.equal((await store.write(switchShard0(ShardMap.fromJSON({ ...bigMap(), version: 2 })), 2)).version, 3);
  } finally {
    raw.close();
    await old.close();
    await store.close();
  }
});

test('shardkit topology upgrade: converts a config\'s etcd store, says what it did, a second run does nothing; a memory store is refused in one line', async () => {
  const key = freshKey();
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-upgrade-'));
  const old = new EtcdTopologyStore({ endpoints: [etcd.endpoint], key, layout: 1 });
  try {
    await old.write(ShardMap.fromJSON(bigMap()), 0);
    const config = join(dir, 'shardkit.json');
    writeFileSync(config, JSON.stringify({ ...defaultConfig({ shards: 16, pairs: 2 }), topologyStore: { kind: 'etcd', endpoints: [etcd.endpoint], key } }));
    const first = await cli(['topology', 'upgrade', '--file', config]);
    assert.equal(first.code, 0, first.stderr);
    assert.equal(first.stdout, `upgraded etcd key ${key} to the record layout: shard map version 1 in 129 records; the old document is kept at ${key}/v1-copy\n`);
    const again = await cli(['topology', 'upgrade', '--file', config, '--json']);
    assert.deepEqual(JSON.parse(again.stdout), { upgraded: false, layout: 2, version: 1, records: 129 });
    assert.equal((await old.read())!.locate(1000).master, 'p126m');
    const memoryConfig = join(dir, 'memory.json');
    writeFileSync(memoryConfig, JSON.stringify({ ...defaultConfig({ shards: 16, pairs: 2 }), topologyStore: { kind: 'memory' } }));
    const refused = await cli(['topology', 'upgrade', '--file', memoryConfig]);
    assert.notEqual(refused.code, 0);
    assert.equal(refused.stderr.trim().split('\n').length, 1, refused.stderr);
    assert.match(refused.stderr, /"memory" topology store/);
  } finally {
    await old.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a config whose map is in etcd: `topology show` prints the live map, not the config\'s seed; `topology close`/`open` change it there; a memory store is refused in one line', async () => {
  const key = freshKey();
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-etcdedit-'));
  const seed = defaultConfig({ shards: 16, pairs: 2 });
  const store = new EtcdTopologyStore({ endpoints: [etcd.endpoint], key });
  try {
    // The live map has moved on from the seed: shards 8..15 on a third pair.
    const live = { ...seed.shardMap, ranges: [seed.shardMap.ranges[0]!, { range: [8, 15] as [number, number], master: 'MySQL003A', slave: 'MySQL003B' }] };
    await store.write(ShardMap.fromJSON(live), 0);
    const config = join(dir, 'shardkit.json');
    writeFileSync(config, JSON.stringify({ ...seed, hosts: { ...seed.hosts, MySQL003A: {}, MySQL003B: {} }, topologyStore: { kind: 'etcd', endpoints: [etcd.endpoint], key } }));
    const show = await cli(['topology', 'show', '--json', '--file', config]);
    assert.equal(show.code, 0, show.stderr);
    const shown = JSON.parse(show.stdout) as ShardMapJson;
    assert.equal(shown.version, 1, 'the live map\'s version');
    assert.deepEqual(shown.ranges.map((r) => r.master), ['MySQL001A', 'MySQL003A']);
    const close = await cli(['topology', 'close', '12..15', '--file', config]);
    assert.equal(close.code, 0, close.stderr);
    assert.equal((await store.read())!.locate(13).open, false, 'closed in etcd');
    assert.equal((await store.read())!.version, 2);
    const open = await cli(['topology', 'open', '12..15', '--file', config]);
    assert.equal(open.code, 0, open.stderr);
    assert.equal((await store.read())!.locate(13).open, true);
    const memoryConfig = join(dir, 'memory.json');
    writeFileSync(memoryConfig, JSON.stringify({ ...seed, topologyStore: { kind: 'memory' } }));
    const refused = await cli(['topology', 'close', '12..15', '--file', memoryConfig]);
    assert.notEqual(refused.code, 0);
    assert.equal(refused.stderr.trim().split('\n').length, 1, refused.stderr);
    assert.match(refused.stderr, /"memory" topology store/);
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('serve on an etcd store: a map it cannot use (a junk root) is logged with its code, and the service routes on by the last good map', { timeout: 120_000 }, async () => {
  ensureBuilt();
  const key = freshKey();
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-etcdlog-'));
  const seed = defaultConfig({ shards: 16, pairs: 2 });
  const raw = new Etcd3({ hosts: etcd.endpoint });
  const store = new EtcdTopologyStore({ endpoints: [etcd.endpoint], key });
  const config = join(dir, 'shardkit.json');
  writeFileSync(config, JSON.stringify({ ...seed, topologyStore: { kind: 'etcd', endpoints: [etcd.endpoint], key } }));
  const proc = spawn(process.execPath, [CLI, 'serve', '--config', config, '--data', dir, '--port', '0', '--no-widecolumn', '--no-dashboard'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const seen = (re: RegExp): Promise<string> => new Promise((resolve, reject) => {
    const check = (): void => {
      const m = re.exec(out);
      if (m) resolve(m[1] ?? m[0]);
    };
    proc.stdout!.on('data', (c: Buffer) => { out += c.toString(); check(); });
    proc.stderr!.on('data', (c: Buffer) => { out += c.toString(); check(); });
    proc.once('exit', (code) => reject(new Error(`serve exited with ${code}: ${out}`)));
    check();
  });
  try {
    const url = await seen(/Server listening at (http:\/\/127\.0\.0\.1:\d+)/);
    const create = async (): Promise<number> => (await fetch(`${url}/v1/objects/pin`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ data: { n: 1 } }) })).status;
    assert.equal(await create(), 201);
    assert.equal((await store.read())!.version, 1, 'the service seeded the store');
    await raw.put(key).value('garbage{');
    const line = await seen(/(\{[^\n]*"code":"INVALID_CONFIG"[^\n]*\})/);
    const logged = JSON.parse(line) as { msg: string; err: string };
    assert.match(logged.msg, /topology/);
    assert.match(logged.err, new RegExp(key.replace(/\//g, '\\/')), 'the line names the key');
    assert.equal(await create(), 201, 'still routing by the last good map');
  } finally {
    proc.kill('SIGKILL');
    raw.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('records layout: a writer that dies after writing a new generation, before the flip, leaves no half-visible change', async () => {
  const key = freshKey();
  const store = new EtcdTopologyStore({ endpoints: [etcd.endpoint], key });
  const service = new EtcdTopologyStore({ endpoints: [etcd.endpoint], key });
  const raw = new Etcd3({ hosts: etcd.endpoint });
  try {
    const v1 = await store.write(ShardMap.fromJSON(bigMap()), 0);
    const seen: ShardMap[] = [];
    await service.read();
    service.watch((m) => seen.push(m));
    // What a large write puts before its flip: a whole generation, here with every shard on p001.
    const dead = `${key}/m/0badc0ffee00/`;
    await raw.put(`${dead}pair/p001m`).value(JSON.stringify([[0, 1023, 'p001s', 1]]));
    await raw.put(`${dead}mod`).value((await raw.get(`${key}/m/${(JSON.parse((await raw.get(key).string())!) as { gen: string }).gen}/mod`).string())!);
    assert.deepEqual((await service.read())!.toJSON(), v1.toJSON(), 'readers see the old map');
    // The next writer goes on from version 1; the watcher hears its map, never the dead one.
    const v2 = await store.write(switchShard0(v1), 1);
    for (; seen.length === 0;) await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(seen.map((m) => m.version), [2]);
    assert.deepEqual(seen[0]!.toJSON(), v2.toJSON());
    assert.equal((await service.read())!.locate(100).master, 'p013m');
    // The next large write (a new generation) leaves no other generation behind, the dead one included.
    const v3 = await store.write(ShardMap.fromJSON({ ...bigMap(), ranges: evenRanges(1024, 128, (i, role) => `q${String(i).padStart(3, '0')}${role[0]}`, true) }), 2);
    const gen = (JSON.parse((await raw.get(key).string())!) as { gen: string }).gen;
    const gens = new Set([...(await keysUnder(raw, key)).keys()].filter((k) => k.startsWith(`${key}/m/`)).map((k) => k.slice(`${key}/m/`.length).split('/')[0]));
    assert.deepEqual([...gens], [gen]);
    assert.deepEqual((await service.read())!.toJSON(), v3.toJSON());
  } finally {
    raw.close();
    await store.close();
    await service.close();
  }
});

test('records layout: a writer process killed -9 in the middle of large rewrites: readers and watchers only ever see whole maps, and the next writer goes on', async () => {
  const key = freshKey();
  const tagged = (t: number): ShardMapJson => ({ ...bigMap(), ranges: evenRanges(1024, 128, (i, role) => `k${t}p${String(i).padStart(3, '0')}${role[0]}`, true) });
  // Each map renames every pair: 128 deletes and 128 puts, so each write is a new generation.
  const maps = [tagged(1), tagged(2), tagged(3)];
  const whole = new Set(maps.map((m) => JSON.stringify(m.ranges)));
  const reader = new EtcdTopologyStore({ endpoints: [etcd.endpoint], key });
  const env = { ...process.env };
  delete env.NODE_TEST_CONTEXT;
  const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('./etcd-store-writer.ts', import.meta.url)), etcd.endpoint, key], { stdio: ['pipe', 'pipe', 'inherit'], env });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const seen: ShardMap[] = [];
  let reads = 0;
  let stop = false;
  try {
    await reader.write(ShardMap.fromJSON(maps[0]!), 0);
    await reader.read();
    reader.watch((m) => seen.push(m));
    // Read as fast as possible while the child writes: every read must be one whole map.
    const reading = (async () => {
      while (!stop) {
        const m = (await reader.read())!;
        assert.ok(whole.has(JSON.stringify(m.toJSON().ranges)), `read version ${m.version}: not one of the maps written`);
        reads++;
      }
    })();
    let wins = 0;
    await new Promise<void>((resolve, reject) => {
      child.once('exit', (code) => reject(new Error(`writer exited with ${code}`)));
      createInterface({ input: child.stdout! }).on('line', (line) => {
        const msg = JSON.parse(line) as { ok?: boolean; ready?: boolean };
        if (msg.ready) child.stdin!.write(`${JSON.stringify({ id: 1, op: 'churn', maps })}\n`);
        else if (msg.ok && ++wins === 3) {
          // The child is already on its next write: kill it there.
          child.kill('SIGKILL');
          resolve();
        }
      });
    });
    await exited;
    stop = true;
    await reading;
    assert.ok(reads > 0);
    const after = (await reader.read())!;
    assert.ok(whole.has(JSON.stringify(after.toJSON().ranges)));
    // The next writer goes on from whatever version stands.
    const next = await reader.write(ShardMap.fromJSON(maps[1]!), after.version);
    while ((seen.at(-1)?.version ?? 0) < next.version) await new Promise((r) => setTimeout(r, 20));
    for (const m of seen) assert.ok(whole.has(JSON.stringify(m.toJSON().ranges)), `watcher heard version ${m.version}: not a whole map`);
    for (let i = 1; i < seen.length; i++) assert.ok(seen[i]!.version > seen[i - 1]!.version);
  } finally {
    stop = true;
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await reader.close();
  }
});

test('records layout: a watch response carrying two transactions yields both maps, in order (no change skipped)', async () => {
  const key = freshKey();
  const store = new EtcdTopologyStore({ endpoints: [etcd.endpoint], key });
  const raw = new Etcd3({ hosts: etcd.endpoint });
  try {
    const v1 = await store.write(ShardMap.fromJSON(bigMap()), 0);
    const snap = await store.snapshot();
    const keys = new EtcdMapKeys(key);
    const state = new RecordWatchState(keys);
    state.reset(snap);
    // Two switches, then the events of both as etcd would send them in one response.
    const from = snap.revision;
    const v2 = await store.write(switchShard0(v1), 1);
    const v3json = v2.toJSON();
    v3json.ranges[2] = { ...v3json.ranges[2]!, open: false };
    const v3 = await store.write(ShardMap.fromJSON(v3json), 2);
    const events: Array<{ type: 'put' | 'delete'; kv: IKeyValue }> = [];
    const w = await raw.watch().inRange({ start: key, end: keys.watchEnd }).startRevision(String(from + 1)).create();
    await new Promise<void>((resolve) => {
      w.on('data', (res) => {
        for (const e of res.events) events.push({ type: e.type === 'Delete' ? 'delete' : 'put', kv: e.kv });
        if (events.filter((e) => e.kv.key.toString() === key).length === 2) resolve();
      });
    });
    await w.cancel();
    const out = state.apply(events, () => assert.fail('not the record layout'));
    assert.ok(out !== 'resync');
    assert.deepEqual(out.map((m) => m.toJSON()), [v2.toJSON(), v3.toJSON()]);
  } finally {
    raw.close();
    await store.close();
  }
});
