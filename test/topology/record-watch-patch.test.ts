/**
 * A subscriber of the record layout applies a change by patching its previous map (#30:
 * ShardMap.patched, src/topology/shard-table.ts), not by rebuilding it. Checked server-free
 * against an oracle (ShardMap.fromJSON of the same map, built whole) over random edits (one-shard
 * moves, open/close, moves frozen and switched, mod-fleet changes, new shards opened at the end),
 * with the watch events a writer would send. The seed is printed; SEED=<n> replays a run.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { IKeyValue } from 'etcd3';
import { EtcdMapKeys, RecordWatchState, snapshotOf } from '../../src/topology/etcd/etcd-map-records.js';
import { encodeRecords, makeRoot } from '../../src/topology/map-records.js';
import { moveShards, setOpen } from '../../src/topology/map-edits.js';
import { evenRanges, ShardMap, type ShardMapJson } from '../../src/topology/shard-map.js';
import { addMove, advanceMove, freezeMove, switchMove } from '../../src/moves/move-state.js';
import { mulberry32 } from '../../src/util/prng.js';

const SEED = Number(process.env.SEED ?? Math.floor(Math.random() * 2 ** 31));
console.log(`record patch seed ${SEED} (SEED=${SEED} replays it)`);

const keys = new EtcdMapKeys('/patch');
const GEN = 'g1';
const pair = (i: number) => ({ master: `pp${String(i).padStart(2, '0')}a`, slave: `pp${String(i).padStart(2, '0')}b` });

/** A writer's view: the records it stored, and the watch events of its next write. */
class FakeWriter {
  revision = 1;
  records: Map<string, string>;

  constructor(public map: ShardMap) {
    this.records = encodeRecords(map.toJSON());
  }

  snapshotKvs(): IKeyValue[] {
    return [this.kv(keys.key, this.rootText(this.map)), ...[...this.records].map(([n, t]) => this.kv(keys.genPrefix(GEN) + n, t))];
  }

  rootText(map: ShardMap): string {
    return JSON.stringify(makeRoot(map.toJSON(), map.version, GEN, encodeRecords(map.toJSON()).size));
  }

  kv(key: string, value: string): IKeyValue {
    return { key: Buffer.from(key), value: Buffer.from(value), mod_revision: String(this.revision), create_revision: '1', version: '1', lease: '0' } as IKeyValue;
  }

  /** The events of writing `json` at the next version: changed records, then the root (one transaction). */
  write(json: ShardMapJson): { map: ShardMap; events: Array<{ type: 'put' | 'delete'; kv: IKeyValue }> } {
    const map = ShardMap.fromJSON({ ...json, version: this.map.version + 1 });
    const next = encodeRecords(map.toJSON());
    this.revision++;
    const events: Array<{ type: 'put' | 'delete'; kv: IKeyValue }> = [];
    for (const [n, t] of next) if (this.records.get(n) !== t) events.push({ type: 'put', kv: this.kv(keys.genPrefix(GEN) + n, t) });
    for (const n of this.records.keys()) if (!next.has(n)) events.push({ type: 'delete', kv: this.kv(keys.genPrefix(GEN) + n, '') });
    events.push({ type: 'put', kv: this.kv(keys.key, this.rootText(map)) });
    this.records = next;
    this.map = map;
    return { map, events };
  }
}

const noOld = (): ShardMap => {
  throw new Error('not the record layout');
};

function assertSameMap(got: ShardMap, want: ShardMap, what: string): void {
  assert.deepEqual(got.toJSON(), want.toJSON(), what);
  assert.equal(got.openShardCount, want.openShardCount, `${what}: open shards`);
  assert.deepEqual(got.frozenObjectRanges(), want.frozenObjectRanges(), `${what}: frozen ranges`);
  for (let s = 0; s < want.shardCount; s++) assert.deepEqual({ ...got.locate(s) }, { ...want.locate(s) }, `${what}: shard ${s}`);
  for (let k = 0; k < 64; k++) if (want.openShardCount > 0) assert.equal(got.pickOpenShard(k / 64), want.pickOpenShard(k / 64), `${what}: pickOpenShard(${k}/64)`);
  assert.throws(() => got.locate(want.shardCount), { code: 'UNKNOWN_SHARD' });
}

test(`a subscriber's patched map equals the map built whole, over 300 random changes (seed ${SEED})`, () => {
  const rand = mulberry32(SEED);
  const seedMap: ShardMapJson = {
    version: 1,
    ranges: evenRanges(1024, 16, (i, role) => (role === 'master' ? pair(i).master : pair(i).slave), true),
    modShards: { count: 16, ranges: evenRanges(16, 2, (i, role) => `ppmod${i}${role[0]}`) },
  };
  const writer = new FakeWriter(ShardMap.fromJSON(seedMap));
  const watcher = new RecordWatchState(keys);
  watcher.reset(snapshotOf(keys, writer.snapshotKvs(), writer.revision, noOld));
  const live: string[] = [];
  let moves = 0;
  for (let step = 0; step < 300; step++) {
    const m = writer.map;
    const shard = Math.floor(rand() * m.shardCount);
    const kind = rand();
    let json: ShardMapJson;
    try {
      if (kind < 0.4) json = moveShards(m, { first: shard, last: Math.min(m.shardCount - 1, shard + Math.floor(rand() * 3)) }, pair(1 + Math.floor(rand() * 16)));
      else if (kind < 0.6) json = setOpen(m, { first: shard, last: Math.min(m.shardCount - 1, shard + Math.floor(rand() * 40)) }, rand() < 0.5);
      else if (kind < 0.75) {
        const id = `pm-${moves++}`;
        json = addMove(m, { id, span: { first: shard, last: shard }, target: pair(1 + Math.floor(rand() * 16)) });
        live.push(id);
      } else if (kind < 0.9 && live.length > 0) {
        const id = live[Math.floor(rand() * live.length)]!;
        const phase = m.move(id)!.phase;
        if (phase === 'started') json = advanceMove(m, id, ['started'], 'copied');
        else if (phase === 'copied') json = freezeMove(m, id);
        else if (phase === 'frozen') json = advanceMove(m, id, ['frozen'], 'fenced');
        else {
          json = switchMove(m, id);
          live.splice(live.indexOf(id), 1);
        }
      } else if (kind < 0.95) {
        // The mod fleet changes hands (a failover of a lookup pair).
        const j = m.toJSON();
        const r = j.modShards.ranges[0]!;
        json = { ...j, modShards: { ...j.modShards, ranges: [{ ...r, master: r.slave!, slave: r.master }, ...j.modShards.ranges.slice(1)] } };
      } else {
        // New shards opened past the end: the table grows, a whole build.
        const last = m.shardCount;
        json = setOpen(m, { first: last, last: last + 15 }, true, pair(1 + Math.floor(rand() * 16)));
      }
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code === 'SHARD_FROZEN' || code === 'INVALID_ARGUMENT' || code === 'INVALID_CONFIG') continue;
      throw err;
    }
    const { map, events } = writer.write(json);
    const out = watcher.apply(events, noOld);
    assert.ok(Array.isArray(out) && out.length === 1, `step ${step}: one map per change (seed ${SEED})`);
    assertSameMap(out[0]!, map, `step ${step} (seed ${SEED})`);
  }
});

test('a change that overlaps an untouched pair\'s range is INVALID_CONFIG naming both records, and the watcher keeps no half map', () => {
  const seedMap: ShardMapJson = {
    version: 1,
    ranges: evenRanges(64, 4, (i, role) => (role === 'master' ? pair(i).master : pair(i).slave), true),
    modShards: { count: 4, ranges: evenRanges(4, 1, (i, role) => `ppmod${i}${role[0]}`) },
  };
  const writer = new FakeWriter(ShardMap.fromJSON(seedMap));
  const watcher = new RecordWatchState(keys);
  watcher.reset(snapshotOf(keys, writer.snapshotKvs(), writer.revision, noOld));
  writer.revision++;
  // pp01's record claims shards 0..20, but 16..20 are pp02's (whose record does not change).
  const bad = JSON.stringify([[0, 20, pair(1).slave, 1]]);
  const events = [
    { type: 'put' as const, kv: writer.kv(keys.genPrefix(GEN) + `pair/${pair(1).master}`, bad) },
    { type: 'put' as const, kv: writer.kv(keys.key, JSON.stringify({ layout: 2, version: 2, gen: GEN, records: 5 })) },
  ];
  assert.throws(() => watcher.apply(events, noOld), (err: Error & { code?: string }) => {
    assert.equal(err.code, 'INVALID_CONFIG');
    assert.match(err.message, /overlaps/);
    assert.match(err.message, new RegExp(`pair/${pair(1).master}`));
    assert.match(err.message, new RegExp(`pair/${pair(2).master}`));
    return true;
  });
  // After the error the next change needs a full read, not a patch on top of a bad one.
  writer.revision++;
  const { events: good } = writer.write(writer.map.toJSON());
  assert.equal(watcher.apply(good, noOld), 'resync');
});

test('a pair record that gives up shards nobody takes is INVALID_CONFIG (a gap), never the old ranges kept', () => {
  const seedMap: ShardMapJson = {
    version: 1,
    ranges: evenRanges(64, 4, (i, role) => (role === 'master' ? pair(i).master : pair(i).slave), true),
    modShards: { count: 4, ranges: evenRanges(4, 1, (i, role) => `ppmod${i}${role[0]}`) },
  };
  const writer = new FakeWriter(ShardMap.fromJSON(seedMap));
  const watcher = new RecordWatchState(keys);
  watcher.reset(snapshotOf(keys, writer.snapshotKvs(), writer.revision, noOld));
  writer.revision++;
  // pp01's record held 0..15; now 0..10, and no other record takes 11..15.
  const events = [
    { type: 'put' as const, kv: writer.kv(keys.genPrefix(GEN) + `pair/${pair(1).master}`, JSON.stringify([[0, 10, pair(1).slave, 1]])) },
    { type: 'put' as const, kv: writer.kv(keys.key, JSON.stringify({ layout: 2, version: 2, gen: GEN, records: 5 })) },
  ];
  assert.throws(() => watcher.apply(events, noOld), (err: Error & { code?: string }) => {
    assert.equal(err.code, 'INVALID_CONFIG');
    assert.match(err.message, /11\.\.15 are not covered/);
    return true;
  });
});

test('a one-shard switch at 65,536 shards on 1,024 pairs is patched from the previous map, never built whole (#30: a subscriber\'s work follows the change)', (t) => {
  const ranges = evenRanges(65_536, 1024, (i, role) => (role === 'master' ? `mp${i}a` : `mp${i}b`), true);
  const writer = new FakeWriter(ShardMap.fromJSON({ version: 1, ranges, modShards: { count: 16, ranges: evenRanges(16, 2, (i, role) => `ppmod${i}${role[0]}`) } }));
  const watcher = new RecordWatchState(keys);
  watcher.reset(snapshotOf(keys, writer.snapshotKvs(), writer.revision, noOld));
  const whole = t.mock.method(ShardMap, 'fromCheckedParts');
  const fromJSON = t.mock.method(ShardMap, 'fromJSON');
  const rand = mulberry32(SEED);
  let last: ShardMap | undefined;
  for (let step = 0; step < 20; step++) {
    const shard = Math.floor(rand() * 65_536);
    const to = 1 + Math.floor(rand() * 1024);
    const json = moveShards(writer.map, { first: shard, last: shard }, { master: `mp${to}a`, slave: `mp${to}b` });
    const { map, events } = writer.write(json);
    const calls = fromJSON.mock.callCount();
    const out = watcher.apply(events, noOld);
    assert.equal(fromJSON.mock.callCount(), calls, `step ${step}: nothing parsed whole (seed ${SEED})`);
    assert.ok(Array.isArray(out) && out.length === 1, `step ${step}: one map (seed ${SEED})`);
    assert.deepEqual(out[0]!.toJSON(), map.toJSON(), `step ${step} (seed ${SEED})`);
    assert.equal(out[0]!.locate(shard).master, `mp${to}a`, `step ${step}: shard ${shard} routes to its new pair (seed ${SEED})`);
    last = out[0]!;
  }
  assert.equal(whole.mock.callCount(), 0, 'no map built whole from records');
  // Every shard routes as in the map built whole (the shard table is patched piece by piece).
  const want = writer.map;
  assert.equal(last!.openShardCount, want.openShardCount);
  for (let s = 0; s < 65_536; s++) {
    const a = last!.locate(s);
    const b = want.locate(s);
    if (a.master !== b.master || a.slave !== b.slave || a.open !== b.open) assert.fail(`shard ${s}: ${JSON.stringify(a)} != ${JSON.stringify(b)} (seed ${SEED})`);
  }
  for (let k = 0; k < 64; k++) assert.equal(last!.pickOpenShard(k / 64), want.pickOpenShard(k / 64));
});

test('locate() returns the same location object on every call for a shard, shared by the shards of its pair: nothing is allocated per call', () => {
  const map = ShardMap.fromJSON({
    version: 1,
    ranges: evenRanges(65536, 1024, (i, role) => (role === 'master' ? `lc${i}a` : `lc${i}b`), true),
    modShards: { count: 4, ranges: evenRanges(4, 1, (i, role) => `lcmod${i}${role[0]}`) },
  });
  for (const s of [0, 255, 256, 40_000, 65_535]) {
    const first = map.locate(s);
    assert.equal(map.locate(s), first);
    // 64 shards a pair: shard s and the first shard of its range share one location.
    assert.equal(map.locate(s - (s % 64)), first);
    assert.equal(first.master, `lc${Math.floor(s / 64) + 1}a`);
    assert.ok(Object.isFrozen(first), 'a shared location cannot be changed by one caller under another');
  }
});

test('a map at 65,536 shards holds one location object per route, not one per shard (#30: memory per subscriber)', () => {
  const map = ShardMap.fromJSON({
    version: 1,
    ranges: evenRanges(65536, 1024, (i, role) => (role === 'master' ? `lm${i % 512}a` : `lm${i % 512}b`), true),
    modShards: { count: 4, ranges: evenRanges(4, 1, (i, role) => `lmmod${i}${role[0]}`) },
  });
  const distinct = new Set<object>();
  for (let s = 0; s < map.shardCount; s++) distinct.add(map.locate(s));
  // 1,024 ranges on 512 pairs: the ranges of one pair share a route.
  assert.equal(distinct.size, 512);
});
