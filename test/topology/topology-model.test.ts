/**
 * Model test of the topology stores against an oracle (#30): several writers make random edits
 * concurrently (one-shard moves between pairs, open/close of spans, the two-step freeze/switch of
 * a move), and several watchers, each on its own store instance, must converge to the store's map,
 * in version order, every map they hear equal to the one the oracle recorded at that version. On
 * memory, file (both layouts) and a real etcd (record layout). The seed is printed; SEED=<n> replays a run.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { changeShardMap } from '../../src/topology/change-shard-map.js';
import { moveShards, setOpen } from '../../src/topology/map-edits.js';
import { evenRanges, ShardMap, type ShardMapJson } from '../../src/topology/shard-map.js';
import type { TopologyStore } from '../../src/topology/topology-store.js';
import { MemoryTopologyBacking, MemoryTopologyStore } from '../../src/topology/memory/memory-topology-store.js';
import { FileTopologyStore } from '../../src/topology/file/file-topology-store.js';
import { EtcdTopologyStore } from '../../src/topology/etcd/etcd-topology-store.js';
import { addMove, casMoveState, freezeMove, advanceMove, switchMove } from '../../src/moves/move-state.js';
import { mulberry32 } from '../../src/util/prng.js';
import { LocalEtcd } from './etcd-server.js';

const SEED = Number(process.env.SEED ?? Math.floor(Math.random() * 2 ** 31));
console.log(`topology model seed ${SEED} (SEED=${SEED} replays it)`);

const PAIRS = 12;
const pair = (i: number) => ({ master: `mdl${String(i).padStart(2, '0')}a`, slave: `mdl${String(i).padStart(2, '0')}b` });
const SEED_MAP: ShardMapJson = {
  version: 0,
  ranges: evenRanges(96, PAIRS, (i, role) => (role === 'master' ? pair(i).master : pair(i).slave), true),
  modShards: { count: 16, ranges: evenRanges(16, 2, (i, role) => `mdlmod${i}${role[0]}`) },
};

const prng = mulberry32;

/** One writer's run: `rounds` random edits; every map it wrote goes into the oracle by version. */
async function writer(store: TopologyStore, rand: () => number, rounds: number, tag: number, oracle: Map<number, ShardMapJson>): Promise<void> {
  const keep = (m: ShardMap) => {
    assert.ok(!oracle.has(m.version), `version ${m.version} was written twice`);
    oracle.set(m.version, m.toJSON());
  };
  for (let i = 0; i < rounds; i++) {
    const shard = Math.floor(rand() * 96);
    const kind = rand();
    try {
      if (kind < 0.5) {
        const to = pair(1 + Math.floor(rand() * PAIRS));
        const out = await changeShardMap(store, (m) => (m.locate(shard).master === to.master ? m.toJSON() : moveShards(m, { first: shard, last: shard }, to)), { attempts: 1000 });
        if (out.written) keep(out.after);
      } else if (kind < 0.8) {
        const open = rand() < 0.5;
        const out = await changeShardMap(store, (m) => setOpen(m, { first: shard, last: Math.min(95, shard + 3) }, open), { attempts: 1000 });
        if (out.written) keep(out.after);
      } else {
        // A whole move's routing steps: add, freeze, fence, switch (each its own compare-and-set).
        const id = `mdl-${tag}-${i}`;
        const to = pair(1 + Math.floor(rand() * PAIRS));
        let m = await casMoveState(store, (x) => addMove(x, { id, span: { first: shard, last: shard }, target: to }), { attempts: 1000 });
        keep(m);
        m = await casMoveState(store, (x) => advanceMove(x, id, ['started'], 'copied'), { attempts: 1000 });
        keep(m);
        m = await casMoveState(store, (x) => freezeMove(x, id), { attempts: 1000 });
        keep(m);
        m = await casMoveState(store, (x) => advanceMove(x, id, ['frozen'], 'fenced'), { attempts: 1000 });
        keep(m);
        m = await casMoveState(store, (x) => switchMove(x, id), { attempts: 1000 });
        keep(m);
      }
    } catch (err) {
      // Edits refused by the map's rules (a shard of a move in progress, a move onto its own pair):
      // nothing written, as the oracle expects.
      const code = (err as { code?: string }).code;
      if (code !== 'SHARD_FROZEN' && code !== 'INVALID_ARGUMENT' && code !== 'INVALID_CONFIG') throw err;
    }
  }
}

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
