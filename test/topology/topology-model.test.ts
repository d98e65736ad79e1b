/**
 * Model test of the topology stores against an oracle (#30): several writers make random edits
 * concurrently (one-shard moves between pairs, open/close of spans, the two-step freeze/switch of
 * a move), and several watchers, each on its own store instance, must converge to the store's map,
 * in version order, every map they hear equal to the one the oracle recorded at that version. On
 * memory, file (both layouts) and a real etcd (record layout); on etcd also with a writer process and
 * a watcher process killed -9 mid-run and started again. The seed is printed; SEED=<n> replays a run.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ShardMap, type ShardMapJson } from '../../src/topology/shard-map.js';
import type { TopologyStore } from '../../src/topology/topology-store.js';
import { MemoryTopologyBacking, MemoryTopologyStore } from '../../src/topology/memory/memory-topology-store.js';
import { FileTopologyStore } from '../../src/topology/file/file-topology-store.js';
import { EtcdTopologyStore } from '../../src/topology/etcd/etcd-topology-store.js';
import { mulberry32 } from '../../src/util/prng.js';
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { LocalEtcd } from './etcd-server.js';
import { SEED_MAP, writer } from './model-edits.js';

const SEED = Number(process.env.SEED ?? Math.floor(Math.random() * 2 ** 31));
console.log(`topology model seed ${SEED} (SEED=${SEED} replays it)`);

const prng = mulberry32;

interface Kind {
  name: string;
  /** Each call: a new store instance on the shared backing. */
  open(): TopologyStore;
  /** Whether a watcher hears every version (etcd and memory deliver each write; the file store polls and may coalesce). */
  everyVersion: boolean;
  cleanup(): Promise<void>;
}

async function runModel(kind: Kind, seed: number): Promise<void> {
  const rand = prng(seed);
  const oracle = new Map<number, ShardMapJson>();
  const writers = [kind.open(), kind.open(), kind.open()];
  const watchers = [kind.open(), kind.open(), kind.open()];
  const heard: ShardMap[][] = watchers.map(() => []);
  try {
    const first = await writers[0]!.write(ShardMap.fromJSON(SEED_MAP), 0);
    oracle.set(first.version, first.toJSON());
    for (const w of watchers) await w.read();
    const unwatch = watchers.map((w, i) => w.watch((m) => heard[i]!.push(m)));
    const seeds = writers.map(() => Math.floor(rand() * 2 ** 31));
    await Promise.all(writers.map((w, i) => writer(w, prng(seeds[i]!), 12, i, oracle)));
    const final = (await writers[0]!.read())!;
    assert.equal(final.version, Math.max(...oracle.keys()), 'the store holds the last version the oracle recorded');
    assert.deepEqual([...oracle.keys()].sort((a, b) => a - b), Array.from({ length: final.version }, (_, i) => i + 1), 'every version is one writer\'s win: none lost, none doubled');
    // Watchers converge: wait (bounded by the test's timeout) for each to hear the final version.
    for (let i = 0; i < watchers.length; i++) {
      while ((heard[i]!.at(-1)?.version ?? 0) < final.version) await new Promise((r) => setTimeout(r, 20));
    }
    for (let i = 0; i < watchers.length; i++) {
      const versions = heard[i]!.map((m) => m.version);
      for (let k = 1; k < versions.length; k++) assert.ok(versions[k]! > versions[k - 1]!, `watcher ${i} heard ${versions[k]} after ${versions[k - 1]} (seed ${seed})`);
      if (kind.everyVersion) assert.deepEqual(versions, Array.from({ length: final.version - 1 }, (_, k) => k + 2), `watcher ${i} missed a change (seed ${seed})`);
      for (const m of heard[i]!) assert.deepEqual(m.toJSON(), oracle.get(m.version), `watcher ${i} version ${m.version} differs from the oracle (seed ${seed})`);
      assert.deepEqual(heard[i]!.at(-1)!.toJSON(), final.toJSON());
    }
    unwatch.forEach((u) => u());
  } finally {
    for (const s of [...writers, ...watchers]) await s.close();
    await kind.cleanup();
  }
}

let etcd: LocalEtcd;
before(async () => {
  etcd = await LocalEtcd.start();
});
after(async () => {
  await etcd?.destroy();
});

test(`model: memory store, 3 writers and 3 watchers (seed ${SEED})`, async () => {
  const backing = new MemoryTopologyBacking();
  await runModel({ name: 'memory', open: () => new MemoryTopologyStore({ backing }), everyVersion: true, cleanup: async () => {} }, SEED);
});

test(`model: file store, 3 writers and 3 watchers (seed ${SEED})`, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-topology-model-'));
  await runModel({ name: 'file', open: () => new FileTopologyStore({ path: join(dir, 'topology.json'), pollIntervalMs: 50 }), everyVersion: false, cleanup: async () => rmSync(dir, { recursive: true, force: true }) }, SEED + 1);
});

test(`model: file store (record layout), 3 writers and 3 watchers (seed ${SEED})`, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-topology-model-'));
  await runModel({ name: 'file records', open: () => new FileTopologyStore({ path: join(dir, 'topology.json'), pollIntervalMs: 50, layout: 2 }), everyVersion: false, cleanup: async () => rmSync(dir, { recursive: true, force: true }) }, SEED + 2);
});

test(`model: etcd store (record layout), 3 writers and 3 watchers (seed ${SEED})`, async () => {
  const key = `/shardkit-model/${process.pid}/topology`;
  await runModel({ name: 'etcd', open: () => new EtcdTopologyStore({ endpoints: [etcd.endpoint], key }), everyVersion: true, cleanup: async () => {} }, SEED + 2);
});

type Line = { intent?: { from: number; map: ShardMapJson }; won?: number; heard?: number; map?: ShardMapJson; read?: boolean };

/** A model-process.ts child and the JSON lines it printed. */
class ModelProcess {
  readonly lines: Line[] = [];
  private readonly child: ChildProcess;
  private readonly exited: Promise<void>;
  private wake: (() => void) | undefined;

  constructor(args: string[]) {
    const env = { ...process.env };
    delete env.NODE_TEST_CONTEXT;
    this.child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('./model-process.ts', import.meta.url)), ...args], { stdio: ['ignore', 'pipe', 'inherit'], env });
    this.exited = new Promise((r) => this.child.once('exit', () => r()));
    void this.exited.then(() => this.wake?.());
    createInterface({ input: this.child.stdout! }).on('line', (line) => {
      this.lines.push(JSON.parse(line) as Line);
      this.wake?.();
    });
  }

  /** Waits until `ready` holds over the lines (bounded by the test's timeout); fails if the process died first. */
  async until(ready: (lines: Line[]) => boolean): Promise<void> {
    while (!ready(this.lines)) {
      if (this.child.exitCode !== null || this.child.signalCode !== null) throw new Error(`model process exited (${this.child.exitCode ?? this.child.signalCode}) before the lines awaited`);
      await new Promise<void>((r) => (this.wake = r));
    }
  }

  async kill(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
    await this.exited;
  }
}

test(`model: etcd store, a writer process and a watcher process killed -9 mid-run and started again (seed ${SEED})`, async () => {
  const key = `/shardkit-model-kill/${process.pid}/topology`;
  const rand = prng(SEED + 3);
  const oracle = new Map<number, ShardMapJson>();
  const writers = [new EtcdTopologyStore({ endpoints: [etcd.endpoint], key }), new EtcdTopologyStore({ endpoints: [etcd.endpoint], key })];
  const children: ModelProcess[] = [];
  const start = (...args: string[]) => {
    const c = new ModelProcess([...args]);
    children.push(c);
    return c;
  };
  try {
    oracle.set(1, (await writers[0]!.write(ShardMap.fromJSON(SEED_MAP), 0)).toJSON());
    const watcher = () => start('watcher', etcd.endpoint, key);
    const w1 = watcher();
    const w2 = watcher();
    await Promise.all([w1, w2].map((w) => w.until((ls) => ls.length > 0)));
    // A writer process, killed -9 on its k-th compare-and-set: sent or about to be, landed or not.
    const c1 = start('writer', etcd.endpoint, key, String(Math.floor(rand() * 2 ** 31)), '7');
    const c1Writes = 2 + Math.floor(rand() * 4);
    await c1.until((ls) => ls.filter((l) => l.intent !== undefined).length >= c1Writes);
    await c1.kill();
    // The in-process writers go on; meanwhile a watcher process is killed -9 and started again,
    // and a second writer process runs until they are done, then is killed -9 too.
    const running = Promise.all(writers.map((w, i) => writer(w, prng(Math.floor(rand() * 2 ** 31)), 8, i, oracle)));
    await w1.kill();
    const w1b = watcher();
    const c2 = start('writer', etcd.endpoint, key, String(Math.floor(rand() * 2 ** 31)), '8');
    await running;
    const c2Writes = c2.lines.filter((l) => l.intent !== undefined).length;
    await c2.until((ls) => ls.filter((l) => l.intent !== undefined).length > c2Writes);
    await c2.kill();
    // The ledger: every acknowledged win, each version once; a killed writer's write in flight
    // may have landed unacknowledged: then it is that writer's last intent, whole.
    for (const c of [c1, c2]) {
      for (const l of c.lines) {
        if (l.won === undefined) continue;
        assert.ok(!oracle.has(l.won), `version ${l.won} was written twice (seed ${SEED})`);
        oracle.set(l.won, l.map!);
      }
    }
    const final = (await writers[0]!.read())!;
    const unacked: number[] = [];
    for (let v = 1; v <= final.version; v++) if (!oracle.has(v)) unacked.push(v);
    console.log(`kill -9 run: ${final.version} versions, ${oracle.size} acknowledged, landed unacknowledged: ${unacked.join(', ') || 'none'}; watcher 1 heard ${w1.lines.length} maps before its kill`);
    assert.ok(unacked.length <= 2, `versions ${unacked.join(', ')} were written by nobody who said so (seed ${SEED})`);
    // What each unacknowledged version held, as the surviving watcher heard it: a killed writer's last intent.
    await Promise.all([w2, w1b].map((w) => w.until((ls) => (ls.at(-1)?.heard ?? 0) >= final.version)));
    for (const v of unacked) {
      const heard = w2.lines.find((l) => l.heard === v);
      assert.ok(heard !== undefined, `watcher 2 did not hear version ${v}`);
      const last = [c1, c2].map((c) => c.lines.filter((l) => l.intent !== undefined).at(-1)!.intent!);
      const intent = last.find((i) => i.from === v - 1 && JSON.stringify({ ...i.map, version: v }) === JSON.stringify(heard.map));
      assert.ok(intent !== undefined, `version ${v} is not the whole map a killed writer was writing (seed ${SEED})`);
      oracle.set(v, heard.map!);
    }
    assert.deepEqual(oracle.get(final.version), final.toJSON(), 'the store holds the last version written');
    // Every watcher life: the map it read, then every later version in order, none missed, each
    // equal to the ledger's; the lives still running reach the final map.
    for (const [name, w, running] of [['watcher 1 (killed)', w1, false], ['watcher 1 (restarted)', w1b, true], ['watcher 2', w2, true]] as const) {
      const versions = w.lines.map((l) => l.heard!);
      assert.ok(versions.length > 0, `${name} heard nothing`);
      for (let k = 1; k < versions.length; k++) assert.equal(versions[k], versions[k - 1]! + 1, `${name} heard ${versions[k]} after ${versions[k - 1]} (seed ${SEED})`);
      for (const l of w.lines) assert.deepEqual(l.map, oracle.get(l.heard!), `${name} version ${l.heard} differs from the ledger (seed ${SEED})`);
      if (running) assert.equal(versions.at(-1), final.version);
    }
  } finally {
    for (const c of children) await c.kill();
    for (const w of writers) await w.close();
  }
});
