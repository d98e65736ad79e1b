import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { mkdtemp, mkdir, readdir, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { FileTopologyStore, ShardKitError, ShardMap, defaultShardMapJson, type ShardMapJson } from '../../src/index.js';
import { runTopologySuite, sampleMap, sampleMapJson, type RemoteTopologyWriter, type WriteOutcome } from '../conformance/topology-suite.js';

const WRITER = fileURLToPath(new URL('./file-store-writer.ts', import.meta.url));
const dirs: string[] = [];
const children = new Set<ChildProcess>();

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'shardkit-topo-'));
  dirs.push(dir);
  return dir;
}

after(async () => {
  for (const c of children) c.kill('SIGKILL');
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

/** Starts file-store-writer.ts in a separate Node process and waits until it is ready. */
async function startWriter(path: string, layout: 1 | 2 = 1): Promise<RemoteTopologyWriter & { child: ChildProcess; holdLock(): Promise<number> }> {
  const env = { ...process.env };
  delete env.NODE_TEST_CONTEXT;
  const child = spawn(process.execPath, ['--import', 'tsx', WRITER, path, String(layout)], { stdio: ['pipe', 'pipe', 'inherit'], env });
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
    child,
    async write(map: ShardMapJson, expectedVersion: number): Promise<WriteOutcome> {
      const r = await call({ op: 'write', map, expectedVersion });
      return r.ok ? { ok: true, version: r.version as number } : { ok: false, code: r.code as string, message: r.message as string };
    },
    async race(rounds: number, tag: string): Promise<number[]> {
      const r = await call({ op: 'race', rounds, tag });
      if (!r.ok) throw new Error(`remote race failed: ${String(r.code)} ${String(r.message)}`);
      return r.won as number[];
    },
    async holdLock(): Promise<number> {
      const r = await call({ op: 'hold-lock' });
      assert.equal(r.ok, true);
      return r.pid as number;
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
  name: 'file',
  supports: { otherProcess: true },
  factory: async () => {
    const dir = await tempDir();
    const path = join(dir, 'topology.json');
    return {
      open: () => new FileTopologyStore({ path, pollIntervalMs: 250 }),
      spawnWriter: () => startWriter(path),
    };
  },
});

runTopologySuite({
  name: 'file (record layout)',
  supports: { otherProcess: true },
  factory: async () => {
    const dir = await tempDir();
    const path = join(dir, 'topology.json');
    return {
      open: () => new FileTopologyStore({ path, pollIntervalMs: 250, layout: 2 }),
      spawnWriter: () => startWriter(path, 2),
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

test('file store: the file holds exactly the JSON form, and no temp or lock file is left behind', async () => {
  const dir = await tempDir();
  const path = join(dir, 'nested', 'topology.json');
  const store = new FileTopologyStore({ path });
  await store.write(ShardMap.fromJSON(defaultShardMapJson()), 0);
  const json = JSON.parse(await readFile(path, 'utf8')) as ShardMapJson;
  assert.deepEqual(json, { ...defaultShardMapJson(), version: 1 });
  assert.deepEqual(Object.keys(json), ['version', 'ranges', 'modShards']);
  assert.deepEqual(await readdir(join(dir, 'nested')), ['topology.json']);
  await store.close();
});

test('file store: a hand-edited file is read, and a corrupt one is INVALID_CONFIG that write does not overwrite', async () => {
  const dir = await tempDir();
  const path = join(dir, 'topology.json');
  await writeFile(path, JSON.stringify(sampleMapJson('hand', 7)));
  const store = new FileTopologyStore({ path });
  assert.equal((await store.read())?.version, 7);
  assert.equal((await store.write(sampleMap('next'), 7)).version, 8);
  await writeFile(path, '{"version": 3, "ranges": [');
  assert.equal(await code(store.read()), 'INVALID_CONFIG');
  assert.equal(await code(store.write(sampleMap('x'), 8)), 'INVALID_CONFIG');
  assert.equal(await readFile(path, 'utf8'), '{"version": 3, "ranges": [');
  await writeFile(path, JSON.stringify({ ...sampleMapJson('gap'), ranges: [{ range: [0, 3], master: 'a' }, { range: [5, 9], master: 'b' }] }));
  assert.equal(await code(store.read()), 'INVALID_CONFIG');
  await store.close();
});

test('file store: a lock held by a live process makes a write give up with STORE_LOCKED and change nothing', async () => {
  const dir = await tempDir();
  const path = join(dir, 'topology.json');
  const store = new FileTopologyStore({ path, lockTimeoutMs: 150 });
  await store.write(sampleMap('base'), 0);
  const holder = await startWriter(path);
  try {
    await holder.holdLock();
    assert.equal(await code(store.write(sampleMap('blocked'), 1)), 'STORE_LOCKED');
    assert.deepEqual((await store.read())?.toJSON(), sampleMapJson('base', 1));
  } finally {
    holder.child.kill('SIGKILL');
    await new Promise((r) => holder.child.once('exit', r));
  }
  // The holder died with the lock file still there: its lock is stale and is broken.
  const stored = await store.write(sampleMap('after-crash'), 1);
  assert.equal(stored.version, 2);
  assert.deepEqual(await readdir(dir), ['topology.json']);
  await store.close();
});

test('file store: a lock older than staleLockMs (e.g. from another host) is broken; a fresh unreadable one is waited on', async () => {
  const dir = await tempDir();
  const path = join(dir, 'topology.json');
  const store = new FileTopologyStore({ path, lockTimeoutMs: 150, staleLockMs: 60_000 });
  await writeFile(`${path}.lock`, JSON.stringify({ pid: 1, host: 'some-other-host', token: 'x', at: 0 }));
  assert.equal(await code(store.write(sampleMap('a'), 0)), 'STORE_LOCKED');
  const old = new Date(Date.now() - 120_000);
  await utimes(`${path}.lock`, old, old);
  assert.equal((await store.write(sampleMap('a'), 0)).version, 1);
  // A lock file created but never filled in (its owner died between open and write).
  await writeFile(`${path}.lock`, '');
  assert.equal(await code(store.write(sampleMap('b'), 1)), 'STORE_LOCKED');
  await utimes(`${path}.lock`, old, old);
  assert.equal((await store.write(sampleMap('b'), 1)).version, 2);
  await store.close();
});

test('file store: watch started before the directory exists hears the first write from another process', async () => {
  const dir = join(await tempDir(), 'not-yet');
  const path = join(dir, 'topology.json');
  const store = new FileTopologyStore({ path, pollIntervalMs: 100 });
  const seen: number[] = [];
  // The bound is armed once the write is done (starting a tsx child can take long on a loaded
  // machine) and is generous: the test is about hearing the write at all, not how fast.
  let timer: NodeJS.Timeout | undefined;
  let arm = (): void => undefined;
  const got = new Promise<void>((resolve, reject) => {
    arm = () => (timer = setTimeout(() => reject(new Error(`never heard the write (saw ${JSON.stringify(seen)})`)), 120_000));
    store.watch((m) => {
      seen.push(m.version);
      resolve();
    });
  });
  await mkdir(dir);
  const writer = await startWriter(path);
  try {
    assert.deepEqual(await writer.write(sampleMapJson('first'), 0), { ok: true, version: 1 });
    arm();
    await got;
    clearTimeout(timer);
    assert.deepEqual(seen, [1]);
  } finally {
    await writer.close();
    await store.close();
  }
});

test('file store: with fs events off, the poll alone delivers another process\'s writes in order', async () => {
  const dir = await tempDir();
  const path = join(dir, 'topology.json');
  const store = new FileTopologyStore({ path, pollIntervalMs: 50, fsEvents: false });
  const seen: number[] = [];
  let guard: NodeJS.Timeout | undefined;
  let arm = (): void => undefined;
  const done = new Promise<void>((resolve, reject) => {
    // Armed after the writes, generous: the test is about order and delivery, not speed.
    arm = () => (guard = setTimeout(() => reject(new Error(`poll never delivered version 3 (saw ${JSON.stringify(seen)})`)), 120_000));
    store.watch((m) => {
      seen.push(m.version);
      if (m.version >= 3) resolve();
    });
  });
  const writer = await startWriter(path);
  try {
    for (let v = 0; v < 3; v++) assert.equal((await writer.write(sampleMapJson(`p${v}`), v)).ok, true);
    arm();
    await done;
    for (let i = 1; i < seen.length; i++) assert.ok(seen[i]! > seen[i - 1]!, JSON.stringify(seen));
    assert.equal(seen.at(-1), 3);
  } finally {
    clearTimeout(guard);
    await writer.close();
    await store.close();
  }
});

test('file store: an idle watcher does not keep the process alive', async () => {
  const dir = await tempDir();
  const path = join(dir, 'topology.json');
  const script = `import { FileTopologyStore } from ${JSON.stringify(new URL('../../src/topology/file/file-topology-store.ts', import.meta.url).href)};
    const s = new FileTopologyStore({ path: ${JSON.stringify(path)}, pollIntervalMs: 100 });
    s.watch(() => {});
    console.log('watching');`;
  const env = { ...process.env };
  delete env.NODE_TEST_CONTEXT;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'], env });
  children.add(child);
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  const exitCode = await new Promise<number | null>((resolve, reject) => {
    // Generous: a tsx child starts slowly on a loaded machine; a watcher that kept it alive would never exit.
    const timer = setTimeout(() => reject(new Error('the watching process did not exit on its own')), 180_000);
    child.on('exit', (c) => (clearTimeout(timer), resolve(c)));
  });
  assert.equal(exitCode, 0);
  assert.equal(out.trim(), 'watching');
});
