/**
 * Moon size (#30): a map of 65,536 shards on 1,000 pairs, fragmented by 10,000 random one-shard
 * moves, in a real etcd started here; then one more one-shard switch, in the record layout and in
 * today's single-document layout, in the same run. SUBSCRIBERS etcd stores (own gRPC client each,
 * one process: 2 shared cores cannot hold 2,000) watch the map. Prints one JSON line at the end.
 *
 * - bytesPerSubscriber: key + value bytes of the watch events one subscriber receives for the switch.
 * - eventLoopMsPerChange: what a subscriber does with them on its event loop (the record layout:
 *   RecordWatchState.apply, the delta; the old layout: JSON.parse + ShardMap.fromJSON of the document).
 * - adoptP99Ms: compare-and-set to each subscriber's listener holding the new version.
 * - largestRequestBytes: the largest transaction the writer sent.
 * - locateRatio: locate() ns at 65,536 shards / at 4,096 shards.
 * - mapWritesDuringMove: map versions a subscriber sees while a mover writes 3 progress updates.
 */
import { Etcd3 } from 'etcd3';
import { performance } from 'node:perf_hooks';
import { EtcdTopologyStore } from '../src/topology/etcd/etcd-topology-store.js';
import { EtcdMapKeys, RecordWatchState, snapshotOf } from '../src/topology/etcd/etcd-map-records.js';
import { encodeRecords } from '../src/topology/map-records.js';
import { MoveProgressWriter } from '../src/moves/move-progress.js';
import { ShardMap, evenRanges, type ShardMapJson, type ShardRange } from '../src/topology/shard-map.js';
import { LocalEtcd } from '../test/topology/etcd-server.js';

const SHARDS = 65_536;
const PAIRS = 1_000;
const MOVES = Number(process.env.BENCH_MOVES ?? 10_000);
const SUBSCRIBERS = Number(process.env.BENCH_SUBSCRIBERS ?? 50);
const pair = (i: number, role: 'master' | 'slave') => `db${String(i).padStart(4, '0')}${role === 'master' ? 'a' : 'b'}`;

/** 65,536 shards over 1,000 pairs (the last pairs take one more), then MOVES one-shard moves. */
function fragmentedMap(seed: number): ShardMapJson {
  let s = seed;
  const rand = () => ((s = (s * 1103515245 + 12345) >>> 0) / 2 ** 32);
  const owner = new Uint16Array(SHARDS);
  for (let i = 0; i < SHARDS; i++) owner[i] = Math.floor((i * PAIRS) / SHARDS) + 1;
  for (let m = 0; m < MOVES; m++) owner[Math.floor(rand() * SHARDS)] = Math.floor(rand() * PAIRS) + 1;
  const ranges: ShardRange[] = [];
  for (let i = 0; i < SHARDS;) {
    let j = i;
    while (j + 1 < SHARDS && owner[j + 1] === owner[i]) j++;
    ranges.push({ range: [i, j], master: pair(owner[i]!, 'master'), slave: pair(owner[i]!, 'slave'), open: true });
    i = j + 1;
  }
  return { version: 0, ranges, modShards: { count: 4096, ranges: evenRanges(4096, 8, (i, r) => `msdb${i}${r[0]}`) } };
}

/** The same map with shard `shard` moved to another pair (splitting its range). */
function switchOne(map: ShardMap, shard: number): ShardMap {
  const json = map.toJSON();
  const out: ShardRange[] = [];
  for (const r of json.ranges) {
    if (r.range[0] > shard || r.range[1] < shard) {
      out.push(r);
      continue;
    }
    const target = r.master === pair(1, 'master') ? 2 : 1;
    if (r.range[0] < shard) out.push({ ...r, range: [r.range[0], shard - 1] });
    out.push({ ...r, range: [shard, shard], master: pair(target, 'master'), slave: pair(target, 'slave') });
    if (shard < r.range[1]) out.push({ ...r, range: [shard + 1, r.range[1]] });
  }
  return ShardMap.fromJSON({ ...json, ranges: out });
}

function locateNs(map: ShardMap): number {
  const n = map.shardCount;
  let x = 0;
  for (let i = 0; i < 200_000; i++) x += map.locate(i % n).shard;
  const t0 = performance.now();
  for (let i = 0; i < 2_000_000; i++) x += map.locate((i * 7919) % n).shard;
  const ns = ((performance.now() - t0) * 1e6) / 2_000_000;
  if (x < 0) console.log(x);
  return ns;
}

const p99 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * 0.99))]!;
const round = (x: number | null, d = 2) => (x === null ? null : Number(x.toFixed(d)));

interface LayoutFigures {
  bytesPerSubscriber: number;
  eventLoopMsPerChange: number;
  cpuMsPerChange?: number;
  adoptP99Ms: number | null;
  largestRequestBytes: number;
  locateRatio: number;
  mapWritesDuringMove: number;
  error?: string;
}

async function run(etcd: LocalEtcd, layout: 1 | 2, base: ShardMapJson, locateRatio: number): Promise<LayoutFigures> {
  const key = `/bench/topology-${layout}`;
  const keys = new EtcdMapKeys(key);
  const writer = new EtcdTopologyStore({ endpoints: [etcd.endpoint], key, layout, dialTimeoutMs: 60_000 });
  const raw = new Etcd3({ hosts: etcd.endpoint });
  const subs: EtcdTopologyStore[] = [];
  try {
    const seeded = ShardMap.fromJSON(base);
    const docBytes = JSON.stringify(seeded.toJSON()).length;
    try {
      await writer.write(seeded, 0);
    } catch (err) {
      // The single document is over etcd's request limit: no subscriber ever gets the map.
      const t0 = performance.now();
      ShardMap.fromJSON(JSON.parse(JSON.stringify(seeded.toJSON())));
      return { bytesPerSubscriber: docBytes, eventLoopMsPerChange: round(performance.now() - t0)!, adoptP99Ms: null, largestRequestBytes: docBytes, locateRatio, mapWritesDuringMove: 1, error: (err as Error).message.slice(0, 200) };
    }
    const current = (await writer.read())!;
    // Subscribers: each its own store and client, watching from the current version.
    const adopted: number[][] = [];
    for (let i = 0; i < SUBSCRIBERS; i++) {
      const s = new EtcdTopologyStore({ endpoints: [etcd.endpoint], key, dialTimeoutMs: 60_000 });
      await s.read();
      subs.push(s);
      adopted.push([]);
    }
    let casAt = 0;
    const waiters: Array<() => void> = [];
    let target = 0;
    subs.forEach((s, i) => s.watch((m) => {
      if (m.version === target) {
        adopted[i]!.push(performance.now() - casAt);
        waiters[i]?.();
      }
    }));
    // What one subscriber receives, counted on a raw watch of the same span.
    let received = 0;
    let events: Array<{ type: 'put' | 'delete'; kv: import('etcd3').IKeyValue }> = [];
    const w = await raw.watch().inRange({ start: key, end: keys.watchEnd }).create();
    w.on('data', (res) => {
      for (const e of res.events) {
        received += e.kv.key.length + e.kv.value.length;
        events.push({ type: e.type === 'Delete' ? 'delete' : 'put', kv: e.kv });
      }
    });
    // Let the watches settle on a first change nobody measures.
    target = current.version + 1;
    let all = subs.map((_, i) => new Promise<void>((r) => (waiters[i] = r)));
    casAt = performance.now();
    let next = await writer.write(switchOne(current, 12_345), current.version);
    await Promise.all(all);
    for (const a of adopted) a.length = 0;
    // The measured switch.
    const snap = await writer.snapshot();
    received = 0;
    events = [];
    target = next.version + 1;
    all = subs.map((_, i) => new Promise<void>((r) => (waiters[i] = r)));
    const after = switchOne(next, 54_321);
    const records = layout === 2 ? encodeRecords(after.toJSON()) : undefined;
    const largest = layout === 2 && snap.layout === 2
      ? [...records!].filter(([n, t]) => snap.records.get(n)?.text !== t).reduce((sum, [n, t]) => sum + keys.genPrefix(snap.root.gen).length + n.length + t.length, 300)
      : JSON.stringify(after.toJSON()).length;
    casAt = performance.now();
    next = await writer.write(after, next.version);
    await Promise.all(all);
    for (; events.length === 0;) await new Promise((r) => setTimeout(r, 10));
    // The subscriber's work for this change, 15 times from the same base (a long-running subscriber is warm): the median, wall and CPU
    // (the machine is shared: CPU time shows the cost apart from waiting for a core).
    const walls: number[] = [];
    const cpus: number[] = [];
    for (let k = 0; k < 15; k++) {
      const fresh = new RecordWatchState(keys);
      fresh.reset(snap);
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      if (layout === 2) fresh.apply(events, () => { throw new Error('not the record layout'); });
      else for (const e of events) ShardMap.fromJSON(JSON.parse(e.kv.value.toString('utf8')));
      walls.push(performance.now() - t0);
      const c = process.cpuUsage(c0);
      cpus.push((c.user + c.system) / 1000);
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const applyMs = median(walls);
    const applyCpuMs = median(cpus);
    // A move's progress: 3 writes; how many map versions does a subscriber see?
    const versionBefore = (await subs[0]!.read())!.version;
    let seenVersions = 0;
    subs[0]!.watch(() => seenVersions++);
    const progress = new MoveProgressWriter(writer, 0);
    progress.track('bench-move', 'started');
    for (let i = 1; i <= 3; i++) {
      progress.note({ rowsCopied: i * 1000 });
      await progress.around(async () => undefined);
    }
    await progress.close();
    const versionAfter = (await subs[0]!.read())!.version;
    await w.cancel();
    return {
      bytesPerSubscriber: received, eventLoopMsPerChange: round(applyMs)!, cpuMsPerChange: round(applyCpuMs)!, adoptP99Ms: round(p99(adopted.flat()))!,
      largestRequestBytes: largest, locateRatio, mapWritesDuringMove: Math.max(seenVersions, versionAfter - versionBefore),
    };
  } finally {
    for (const s of subs) await s.close();
    raw.close();
    await writer.close();
  }
}

const etcd = await LocalEtcd.start();
try {
  const base = fragmentedMap(30);
  const big = ShardMap.fromJSON(base);
  const small = ShardMap.fromJSON({ ...base, ranges: evenRanges(4096, 8, (i, r) => pair(i, r), true) });
  const locateRatio = round(locateNs(big) / locateNs(small))!;
  console.log(`map: ${SHARDS} shards, ${PAIRS} pairs, ${big.objectRanges().length} ranges after ${MOVES} one-shard moves; ${JSON.stringify(base).length} bytes as one document; ${SUBSCRIBERS} subscribers`);
  const neu = await run(etcd, 2, base, locateRatio);
  console.log('record layout', JSON.stringify(neu));
  const old = await run(etcd, 1, base, locateRatio);
  console.log('single document', JSON.stringify(old));
  // The old layout wrote progress into the map: one map version per progress write (PROGRESS_EVERY_MS).
  console.log(JSON.stringify({ subscribers: SUBSCRIBERS, new: neu, old }));
} finally {
  await etcd.destroy();
}
