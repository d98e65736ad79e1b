import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Etcd3 } from 'etcd3';
import { EtcdTopologyStore, ShardKit, ShardKitError, ShardMap, createTopologyStore, type ShardMapJson } from '../../src/index.js';
import { defaultConfig, parseConfig } from '../../src/config/config.js';
import { runTopologySuite, sampleMap, sampleMapJson, type RemoteTopologyWriter, type WriteOutcome } from '../conformance/topology-suite.js';
import { LocalEtcd } from './etcd-server.js';

const WRITER = fileURLToPath(new URL('./etcd-store-writer.ts', import.meta.url));
const children = new Set<ChildProcess>();
let etcd: LocalEtcd;
let keys = 0;
/** Each test gets its own key: an isolated backing on the one etcd this file starts. */
const freshKey = (): string => `/shardkit-test/${process.pid}/${++keys}/topology`;

before(async () => {
  etcd = await LocalEtcd.start();
});
after(async () => {
  for (const c of children) c.kill('SIGKILL');
  await etcd?.destroy();
});

/** Starts etcd-store-writer.ts in a separate Node process and waits until it is ready. */
async function startWriter(endpoint: string, key: string): Promise<RemoteTopologyWriter> {
  const env = { ...process.env };
  delete env.NODE_TEST_CONTEXT;
  const child = spawn(process.execPath, ['--import', 'tsx', WRITER, endpoint, key], { stdio: ['pipe', 'pipe', 'inherit'], env });
  children.add(child);
  child.on('exit', () => children.delete(child));
  const pending = new Map<number, (msg: Record<string, unknown>) => void>();
  let nextId = 1;
  const ready = new Promise<void>((resolve, reject) => {
    pending.set(0, () => resolve());
    child.on('exit', (code) => reject(new Error(`writer exited early with ${code}`)));
  });
  createInterface({ input: child.stdout! }).on('line', (line) => {
    const msg = JSON.parse(line) as Record<string, unknown>;
    const fn = pending.get(msg.id as number);
    pending.delete(msg.id as number);
    fn?.(msg);
  });
  const call = (cmd: object): Promise<Record<string, unknown>> => {
    const id = nextId++;
    return new Promise((resolve) => {
      pending.set(id, resolve);
      child.stdin!.write(`${JSON.stringify({ id, ...cmd })}\n`);
    });
  };
  await ready;
  return {
    async write(map: ShardMapJson, expectedVersion: number): Promise<WriteOutcome> {
      const r = await call({ op: 'write', map, expectedVersion });
      return r.ok ? { ok: true, version: r.version as number } : { ok: false, code: r.code as string, message: r.message as string };
    },
    async race(rounds: number, tag: string): Promise<number[]> {
      const r = await call({ op: 'race', rounds, tag });
      if (!r.ok) throw new Error(`remote race failed: ${String(r.code)} ${String(r.message)}`);
      return r.won as number[];
    },
    async close(): Promise<void> {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.stdin!.end();
      await exited;
    },
  };
}

runTopologySuite({
  name: 'etcd',
  supports: { otherProcess: true },
  factory: () => {
    const key = freshKey();
    return {
      open: () => new EtcdTopologyStore({ endpoints: [etcd.endpoint], key }),
      spawnWriter: () => startWriter(etcd.endpoint, key),
    };
  },
});

async function code(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof ShardKitError, String(err));
    return err.code;
  }
  assert.fail('expected an error');
}

/** Resolves with the first map of at least `version` a store's watch delivers (rejects after a hang guard, not a speed check). */
function nextMap(store: EtcdTopologyStore, version: number, seen: number[] = []): Promise<ShardMap> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`watch never delivered version ${version} (saw ${JSON.stringify(seen)})`)), 30_000);
    const stop = store.watch((m) => {
      seen.push(m.version);
      if (m.version >= version) {
        clearTimeout(timer);
        stop();
        resolve(m);
      }
    });
  });
}

test('etcd store: two instances racing CAS on the same version: exactly one wins each round', async () => {
  const key = freshKey();
  const a = new EtcdTopologyStore({ endpoints: [etcd.endpoint], key });
  const b = new EtcdTopologyStore({ endpoints: [etcd.endpoint], key });
  try {
    for (let v = 0; v < 10; v++) {
      const results = await Promise.allSettled([a.write(sampleMap(`a${v}`), v), b.write(sampleMap(`b${v}`), v), a.write(sampleMap(`a${v}x`), v), b.write(sampleMap(`b${v}x`), v)]);
      const won = results.filter((r): r is PromiseFulfilledResult<ShardMap> => r.status === 'fulfilled');
      assert.equal(won.length, 1, `round ${v}: ${won.length} winners`);
      assert.equal(won[0]!.value.version, v + 1);
      for (const r of results) {
        if (r.status === 'rejected') {
          assert.equal((r.reason as ShardKitError).code, 'VERSION_CONFLICT');
          assert.deepEqual((r.reason as ShardKitError).details, { expectedVersion: v, actualVersion: v + 1 });
        }
      }
      assert.deepEqual((await b.read())?.toJSON(), won[0]!.value.toJSON());
    }
  } finally {
    await a.close();
    await b.close();
  }
});

test('etcd store, single-document layout: the key holds the JSON form; an invalid stored value is INVALID_CONFIG naming the key and is not overwritten', async () => {
  const key = freshKey();
  const store = new EtcdTopologyStore({ endpoints: [etcd.endpoint], key, layout: 1 });
  const raw = new Etcd3({ hosts: etcd.endpoint });
  try {
    await store.write(sampleMap('json'), 0);
    assert.deepEqual(JSON.parse((await raw.get(key).string())!), sampleMapJson('json', 1));
    await raw.put(key).value('{"version": 3, "ranges": [');
    for (const call of [() => store.read(), () => store.write(sampleMap('x'), 1)]) {
      const err = await call().then(() => undefined, (e: unknown) => e);
      assert.ok(err instanceof ShardKitError && err.code === 'INVALID_CONFIG', String(err));
      assert.match(err.message, new RegExp(`etcd key ${key}`));
    }
    assert.equal(await raw.get(key).string(), '{"version": 3, "ranges": [');
    await raw.put(key).value(JSON.stringify({ ...sampleMapJson('gap', 4), ranges: [{ range: [0, 3], master: 'a' }, { range: [5, 9], master: 'b' }] }));
    assert.equal(await code(store.read()), 'INVALID_CONFIG');
    // A valid hand-written map is taken as is, and CAS goes on from its version.
    await raw.put(key).value(JSON.stringify(sampleMapJson('hand', 7)));
    assert.equal((await store.read())?.version, 7);
    assert.equal((await store.write(sampleMap('next'), 7)).version, 8);
  } finally {
    raw.close();
    await store.close();
  }
});

test('etcd store: a ShardKit opened with an etcd topologyStore follows a map written by another instance, without reopening', async () => {
  const key = freshKey();
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-etcd-kit-'));
  const input = defaultConfig({ shards: 16, pairs: 2 });
  const config = {
    ...input,
    hosts: { ...input.hosts, MySQL009A: {} },
    topologyStore: { kind: 'etcd' as const, endpoints: [etcd.endpoint], key },
  };
  const kit = await ShardKit.open({ config, dataDir: dir });
  const operator = new EtcdTopologyStore({ endpoints: [etcd.endpoint], key });
  try {
    const seeded = await operator.read();
    assert.equal(seeded?.version, 1, 'ShardKit.open seeds the empty key with the config map');
    const board = await kit.objects.create('board', { v: 1 }, { shard: 3 });
    assert.ok(existsSync(join(dir, 'hosts', 'MySQL001A', 'db00003.sqlite')));
    const json = seeded!.toJSON();
    const moved = ShardMap.fromJSON({
      ...json,
      ranges: [{ range: [0, 3], master: 'MySQL009A', open: true }, { ...json.ranges[0]!, range: [4, 7] }, ...json.ranges.slice(1)],
    });
    const switched = new Promise((resolve) => kit.events.once('topology', resolve));
    await operator.write(moved, 1);
    await switched;
    assert.equal((await kit.shardMap()).version, 2);
    // Shard 3 now routes to MySQL009A, which has no copy of the board: reads miss, writes go there.
    await assert.rejects(kit.objects.get(board.id), (e) => e instanceof ShardKitError && e.code === 'NOT_FOUND');
    await kit.objects.create('pin', {}, { near: board.id });
    assert.ok(existsSync(join(dir, 'hosts', 'MySQL009A', 'db00003.sqlite')));
  } finally {
    await operator.close();
    await kit.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('etcd store: etcd down -> read and write fail with TOPOLOGY_UNAVAILABLE; back up -> the watch resumes and delivers the newer map', async () => {
  // A server of its own: stopping the shared one would disturb the other tests of this file.
  const server = await LocalEtcd.start();
  const key = freshKey();
  const watcher = new EtcdTopologyStore({ endpoints: [server.endpoint], key, dialTimeoutMs: 2000, retryMaxMs: 200 });
  const writer = new EtcdTopologyStore({ endpoints: [server.endpoint], key, dialTimeoutMs: 2000, retryMaxMs: 200 });
  try {
    await writer.write(sampleMap('v1'), 0);
    assert.equal((await watcher.read())?.version, 1);
    const seen: number[] = [];
    const first = nextMap(watcher, 2, seen);
    await writer.write(sampleMap('v2'), 1);
    assert.equal((await first).version, 2);

    const resumed = nextMap(watcher, 3, seen);
    await server.stop();
    for (const call of [() => watcher.read(), () => writer.read(), () => writer.write(sampleMap('while-down'), 2)]) {
      const err = await call().then(() => undefined, (e: unknown) => e);
      assert.ok(err instanceof ShardKitError && err.code === 'TOPOLOGY_UNAVAILABLE', String(err));
      assert.equal(err.status, 503);
      assert.match(err.message, new RegExp(server.endpoint));
    }
    await server.restart();
    // The failed write did not land: the store still holds version 2.
    assert.equal((await writer.read())?.version, 2);
    await writer.write(sampleMap('after-restart'), 2);
    const map = await resumed;
    assert.deepEqual(map.toJSON(), sampleMapJson('after-restart', 3));
    assert.deepEqual(seen, [2, 3]);
  } finally {
    await watcher.close();
    await writer.close();
    await server.destroy();
  }
});

test('etcd store: a store whose etcd never answers fails reads with TOPOLOGY_UNAVAILABLE instead of hanging', async () => {
  const server = await LocalEtcd.start();
  const endpoint = server.endpoint;
  await server.destroy();
  const store = new EtcdTopologyStore({ endpoints: [endpoint], key: freshKey(), dialTimeoutMs: 300 });
  try {
    assert.equal(await code(store.read()), 'TOPOLOGY_UNAVAILABLE');
    assert.equal(await code(store.write(sampleMap('x'), 0)), 'TOPOLOGY_UNAVAILABLE');
    // A watch on an unreachable etcd does not throw; it keeps retrying until closed.
    const stop = store.watch(() => {});
    stop();
  } finally {
    await store.close();
  }
  assert.equal(await code(store.read()), 'CLOSED');
});

test('etcd store config: endpoints must be http(s) URLs, the key must start with / and be printable; createTopologyStore builds the store', () => {
  const base = defaultConfig({ shards: 16, pairs: 2 });
  const parsed = parseConfig({ ...base, topologyStore: { kind: 'etcd', endpoints: ['http://127.0.0.1:2379', 'https://etcd.example:2379'] } });
  assert.deepEqual(parsed.topologyStore, { kind: 'etcd', endpoints: ['http://127.0.0.1:2379', 'https://etcd.example:2379'] });
  const bad: unknown[] = [
    { kind: 'etcd', endpoints: [] },
    { kind: 'etcd', endpoints: ['127.0.0.1:2379'] },
    { kind: 'etcd', endpoints: ['redis://127.0.0.1:2379'] },
    { kind: 'etcd', endpoints: ['http://127.0.0.1:2379'], key: 'no-slash' },
    { kind: 'etcd', endpoints: ['http://127.0.0.1:2379'], key: '/with space' },
    { kind: 'etcd', endpoints: ['http://127.0.0.1:2379'], key: '/tab\there' },
    { kind: 'etcd', endpoints: ['http://127.0.0.1:2379'], dialTimeoutMs: 0 },
    { kind: 'etcd', endpoints: ['http://127.0.0.1:2379'], extra: 1 },
  ];
  for (const topologyStore of bad) {
    assert.throws(() => parseConfig({ ...base, topologyStore } as never), (e) => e instanceof ShardKitError && e.code === 'INVALID_CONFIG', JSON.stringify(topologyStore));
  }
  const store = createTopologyStore({ kind: 'etcd', endpoints: ['http://127.0.0.1:1'], key: '/a/b', dialTimeoutMs: 100 });
  assert.ok(store instanceof EtcdTopologyStore);
  assert.equal(store.key, '/a/b');
  const defaultKey = createTopologyStore({ kind: 'etcd', endpoints: ['http://127.0.0.1:1'] }) as EtcdTopologyStore;
  assert.equal(defaultKey.key, '/shardkit/topology');
});

test('etcd store: etcd3 is loaded only when an etcd store is first used, and a CLI-style await on a down etcd gets its error', async () => {
  const script = `import { createRequire } from 'node:module';
    const { createTopologyStore } = await import(${JSON.stringify(new URL('../../src/index.ts', import.meta.url).href)});
    const loaded = () => Object.keys(createRequire(import.meta.url).cache).some((k) => k.includes('/etcd3/'));
    const store = createTopologyStore({ kind: 'etcd', endpoints: ['http://127.0.0.1:1'], dialTimeoutMs: 200 });
    console.log('before', loaded());
    await store.read().catch((e) => console.log('code', e.code));
    console.log('after', loaded());
    await store.close();`;
  const env = { ...process.env };
  delete env.NODE_TEST_CONTEXT;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'], env });
  children.add(child);
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  const exitCode = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  assert.equal(exitCode, 0);
  assert.deepEqual(out.trim().split('\n'), ['before false', 'code TOPOLOGY_UNAVAILABLE', 'after true']);
});
