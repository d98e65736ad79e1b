/**
 * The model's random edits (#30), shared by topology-model.test.ts and its writer processes
 * (model-process.ts): one-shard moves between pairs, open/close of spans, and the five routing
 * steps of a move (add, copied, freeze, fenced, switch), each its own compare-and-set.
 */
import assert from 'node:assert/strict';
import { changeShardMap } from '../../src/topology/change-shard-map.js';
import { moveShards, setOpen } from '../../src/topology/map-edits.js';
import { evenRanges, type ShardMap, type ShardMapJson } from '../../src/topology/shard-map.js';
import type { TopologyStore } from '../../src/topology/topology-store.js';
import { addMove, casMoveState, freezeMove, advanceMove, switchMove } from '../../src/moves/move-state.js';

export const PAIRS = 12;
export const pair = (i: number) => ({ master: `mdl${String(i).padStart(2, '0')}a`, slave: `mdl${String(i).padStart(2, '0')}b` });
export const SEED_MAP: ShardMapJson = {
  version: 0,
  ranges: evenRanges(96, PAIRS, (i, role) => (role === 'master' ? pair(i).master : pair(i).slave), true),
  modShards: { count: 16, ranges: evenRanges(16, 2, (i, role) => `mdlmod${i}${role[0]}`) },
};

/** One writer's run: `rounds` random edits; every map it wrote goes into the oracle by version. */
export async function writer(store: TopologyStore, rand: () => number, rounds: number, tag: number, oracle: Map<number, ShardMapJson>): Promise<void> {
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

