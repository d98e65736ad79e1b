/**
 * One subscriber's work for one one-shard switch at moon size (#30), without etcd: the record
 * layout's watch state applying the switch's events (decode the changed records, patch the
 * compact map) to a map of 65,536 shards on 1,000 pairs fragmented by 10,000 one-shard moves.
 * What topology-scale.bench.ts's subscribers do per change apart from gRPC; quick to profile
 * (`node --cpu-prof --import tsx bench/topology-apply.bench.ts`). Prints µs per change, the
 * median of ROUNDS rounds of ITER changes each, and the same for a whole build (ShardMap.fromCheckedParts) beside it.
 */
import type { IKeyValue } from 'etcd3';
import { performance } from 'node:perf_hooks';
import { EtcdMapKeys, RecordWatchState, snapshotOf } from '../src/topology/etcd/etcd-map-records.js';
import { encodeRecords, makeRoot } from '../src/topology/map-records.js';
import { ShardMap } from '../src/topology/shard-map.js';
import { fragmentedMap, switchOne } from './moon-map.js';

const ITER = Number(process.env.ITER ?? 200);
const ROUNDS = Number(process.env.ROUNDS ?? 7);
const keys = new EtcdMapKeys('/bench/apply');
const kv = (key: string, value: string, rev: number): IKeyValue => ({ key: Buffer.from(key), value: Buffer.from(value), mod_revision: String(rev), create_revision: '1', version: '1', lease: '0' });

const base = ShardMap.fromJSON(fragmentedMap(30));
const baseRecords = encodeRecords(base.toJSON());
const gen = 'abc123';
const baseKvs = [kv(keys.key, JSON.stringify(makeRoot(base.toJSON(), base.version, gen, baseRecords.size)), 10), ...[...baseRecords].map(([n, t]) => kv(keys.genPrefix(gen) + n, t, 10))];
const snap = snapshotOf(keys, baseKvs, 10, () => { throw new Error('not the record layout'); });

// ITER successive switches to pairs spread over the fleet (a long run of moves onto one pair would grow its record), each as the events of its transaction (changed records, then the root).
const changes: Array<Array<{ type: 'put' | 'delete'; kv: IKeyValue }>> = [];
let map = base;
let records = baseRecords;
for (let i = 0; i < ITER; i++) {
  const next = switchOne(map, (i * 7919) % 65_536, 1 + ((i * 104_729) % 1000)).withVersion(map.version + 1);
  const nextRecords = encodeRecords(next.toJSON());
  const rev = 11 + i;
  const events: Array<{ type: 'put' | 'delete'; kv: IKeyValue }> = [];
  for (const [n, t] of nextRecords) if (records.get(n) !== t) events.push({ type: 'put', kv: kv(keys.genPrefix(gen) + n, t, rev) });
  for (const n of records.keys()) if (!nextRecords.has(n)) events.push({ type: 'delete', kv: kv(keys.genPrefix(gen) + n, '', rev) });
  events.push({ type: 'put', kv: kv(keys.key, JSON.stringify(makeRoot(next.toJSON(), next.version, gen, nextRecords.size)), rev) });
  changes.push(events);
  map = next;
  records = nextRecords;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const rounds: number[] = [];
let last: ShardMap | undefined;
for (let r = 0; r <= ROUNDS; r++) {
  const state = new RecordWatchState(keys);
  state.reset(snap);
  const t0 = performance.now();
  for (const events of changes) {
    const out = state.apply(events, () => { throw new Error('not the record layout'); });
    if (out === 'resync' || out.length !== 1) throw new Error('the switch did not apply as a delta');
    last = out[0];
  }
  if (r > 0) rounds.push(((performance.now() - t0) * 1000) / ITER); // round 0 warms up
}
if (JSON.stringify(last!.toJSON()) !== JSON.stringify(map.toJSON())) throw new Error('the patched map differs from the written one');
const whole: number[] = [];
for (let r = 0; r < 5; r++) {
  const t0 = performance.now();
  ShardMap.fromCheckedParts(map.toJSON());
  whole.push((performance.now() - t0) * 1000);
}
console.log(JSON.stringify({ applyUsPerChange: Number(median(rounds).toFixed(1)), wholeBuildUs: Number(median(whole).toFixed(0)), changes: ITER, ranges: base.objectRangeCount }));
