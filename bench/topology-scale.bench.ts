/**
 * Moon size (#30): a map of 65,536 shards on 1,000 pairs, fragmented by 10,000 random one-shard
 * moves, in a real etcd started here; then one more one-shard switch, in the record layout and in
 * today's single-document layout, in the same run. PROCS processes of PER etcd stores each
 * (bench/topology-subscribers.ts: each store its own watch state, map and listeners, like one
 * service; the stores of a process share one etcd3 client, hence one etcd watch, unless CLIENT=own) watch the map:
 * 20 x 100 = 2,000 by default; the old layout gets OLD_PROCS x OLD_PER (default 5 x 100: each of
 * its subscribers parses the whole 1.2 MB document per change). Prints one JSON line at the end.
 *
 * - bytesPerSubscriber: key + value bytes of the watch events one subscriber receives for the switch.
 * - eventLoopMsPerChange: what a subscriber does with them on its event loop (the record layout:
 *   RecordWatchState.apply, the delta; the old layout: JSON.parse + ShardMap.fromJSON of the document).
 * - adoptP99Ms: compare-and-set to each subscriber's listener holding the new version.
 * - subscriberCpuMsPerChange: CPU the subscriber processes spent on the change, per subscriber
 *   (gRPC decoding included), from the processes' own counters.
 * - rssBytesPerSubscriber: a subscriber process's resident memory over its stores (the Node
 *   process's own ~50-100 MB included); heapBytesPerSubscriber: its JS heap after a GC, likewise.
 * - largestRequestBytes: the largest transaction the writer sent.
 * - locateRatio: locate() ns at 65,536 shards / at 4,096 shards: the same loop over 1M random
 *   shards of each map (precomputed), the two maps in turn, best of 7 rounds each.
 * - mapWritesDuringMove: map versions a subscriber sees while a mover writes 3 progress updates.
 */
import { Etcd3 } from 'etcd3';
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { EtcdTopologyStore } from '../src/topology/etcd/etcd-topology-store.js';
import { EtcdMapKeys, RecordWatchState, snapshotOf } from '../src/topology/etcd/etcd-map-records.js';
import { encodeRecords } from '../src/topology/map-records.js';
import { MoveProgressWriter } from '../src/moves/move-progress.js';
import { ShardMap, evenRanges, type ShardMapJson } from '../src/topology/shard-map.js';
import { LocalEtcd } from '../test/topology/etcd-server.js';
import { MOVES, PAIRS, SHARDS, fragmentedMap, pair, switchOne } from './moon-map.js';

const PROCS = Number(process.env.PROCS ?? 20);
const PER = Number(process.env.PER ?? 100);
const OLD_PROCS = Number(process.env.OLD_PROCS ?? 5);
const OLD_PER = Number(process.env.OLD_PER ?? 100);
const pair = (i: number, role: 'master' | 'slave') => `db${String(i).padStart(4, '0')}${role === 'master' ? 'a' : 'b'}`;

/** ns per locate() over `shards` (random shards of the map, precomputed: the loop does nothing else). */
function locatePass(map: ShardMap, shards: Int32Array): number {
  let x = 0;
  const t0 = performance.now();
  for (let i = 0; i < shards.length; i++) x += map.locate(shards[i]!).open ? 1 : 0;
  const ns = ((performance.now() - t0) * 1e6) / shards.length;
  if (x < 0) console.log(x);
  return ns;
}

/** locate() ns at each map: the same loop, 1M random shards each, the maps in turn, best of 7 rounds. */
function locateNs(maps: ShardMap[]): number[] {
  let s = 7;
  const rand = () => ((s = (s * 1103515245 + 12345) >>> 0) / 2 ** 32);
  const shards = maps.map((m) => Int32Array.from({ length: 1_000_000 }, () => Math.floor(rand() * m.shardCount)));
  const best = maps.map(() => Infinity);
  for (let round = 0; round < 8; round++) {
    for (let k = 0; k < maps.length; k++) {
      const ns = locatePass(maps[k]!, shards[k]!);
      if (round > 0) best[k] = Math.min(best[k]!, ns); // round 0 warms up
    }
  }
  return best;
}

const p99 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * 0.99))]!;
const round = (x: number | null, d = 2) => (x === null ? null : Number(x.toFixed(d)));

/** PROCS subscriber processes of PER stores each, and their messages. */
class Subscribers {
  private readonly queues: Array<Array<Record<string, unknown>>> = [];
  private readonly wakers: Array<(() => void) | undefined> = [];

  private constructor(private readonly children: ChildProcess[]) {}

  static async start(endpoint: string, key: string, procs: number, per: number): Promise<{ subs: Subscribers; rssBytes: number[]; heapBytes: number[] }> {
    const script = fileURLToPath(new URL('./topology-subscribers.ts', import.meta.url));
    const children: ChildProcess[] = [];
    // One at a time: each process's first reads are the map's full size.
    const subs = new Subscribers(children);
    const rssBytes: number[] = [];
    const heapBytes: number[] = [];
    for (let i = 0; i < procs; i++) {
      const c = spawn(process.execPath, ['--expose-gc', '--import', 'tsx', script, endpoint, key, String(per)], { stdio: ['pipe', 'pipe', 'pipe'] });
      children.push(c);
      subs.listen(i);
      const ready = await subs.next(i, 'ready');
      rssBytes.push(ready.rssBytes as number);
      heapBytes.push(ready.heapBytes as number);
    }
    return { subs, rssBytes, heapBytes };
  }

  private listen(i: number): void {
    const c = this.children[i]!;
    this.queues[i] = [];
    createInterface({ input: c.stdout! }).on('line', (line) => {
      this.queues[i]!.push(JSON.parse(line) as Record<string, unknown>);
      this.wakers[i]?.();
    });
    c.stderr!.on('data', (d: Buffer) => process.stderr.write(`[subscribers ${i}] ${d.toString()}`));
  }

  async next(i: number, field: string): Promise<Record<string, unknown>> {
    for (;;) {
      const k = this.queues[i]!.findIndex((m) => field in m);
      if (k >= 0) return this.queues[i]!.splice(k, 1)[0]!;
      if (this.children[i]!.exitCode !== null) throw new Error(`subscriber process ${i} exited (${this.children[i]!.exitCode})`);
      await new Promise<void>((r) => (this.wakers[i] = r));
    }
  }

  /** Tells every process the version to wait for, and waits until each has it armed. */
  async arm(version: number): Promise<void> {
    for (const c of this.children) c.stdin!.write(`${JSON.stringify({ target: version })}\n`);
    await Promise.all(this.children.map((_, i) => this.next(i, 'armed')));
  }

  /** Adoption times (epoch ms) of every store, and the processes' CPU ms. */
  async adopted(): Promise<{ at: number[]; cpuMs: number }> {
    const all = await Promise.all(this.children.map((_, i) => this.next(i, 'adopted')));
    return { at: all.flatMap((m) => m.adopted as number[]), cpuMs: all.reduce((sum, m) => sum + (m.cpuMs as number), 0) };
  }

  async stop(): Promise<void> {
    await Promise.all(this.children.map((c) => new Promise<void>((r) => {
      if (c.exitCode !== null) return r();
      c.once('exit', () => r());
      c.stdin!.write(`${JSON.stringify({ exit: true })}\n`);
    })));
  }
}

const epochNow = () => performance.timeOrigin + performance.now();

interface LayoutFigures {
  bytesPerSubscriber: number;
  eventLoopMsPerChange: number;
  cpuMsPerChange?: number;
  subscribers: number;
  adoptP99Ms: number | null;
  adoptP50Ms?: number;
  subscriberCpuMsPerChange?: number;
  rssBytesPerSubscriber?: number;
  heapBytesPerSubscriber?: number;
  largestRequestBytes: number;
  locateRatio: number;
  mapWritesDuringMove: number;
  error?: string;
}

async function run(etcd: LocalEtcd, layout: 1 | 2, base: ShardMapJson, locateRatio: number, procs: number, per: number): Promise<LayoutFigures> {
  const key = `/bench/topology-${layout}`;
  const keys = new EtcdMapKeys(key);
  const writer = new EtcdTopologyStore({ endpoints: [etcd.endpoint], key, layout, dialTimeoutMs: 60_000 });
  const raw = new Etcd3({ hosts: etcd.endpoint });
  const watcher = new EtcdTopologyStore({ endpoints: [etcd.endpoint], key, dialTimeoutMs: 60_000 });
  let subs: Subscribers | undefined;
  try {
    const seeded = ShardMap.fromJSON(base);
    const docBytes = JSON.stringify(seeded.toJSON()).length;
    try {
      await writer.write(seeded, 0);
    } catch (err) {
      // The single document is over etcd's request limit: no subscriber ever gets the map.
      const t0 = performance.now();
      ShardMap.fromJSON(JSON.parse(JSON.stringify(seeded.toJSON())));
      return { bytesPerSubscriber: docBytes, eventLoopMsPerChange: round(performance.now() - t0)!, subscribers: 0, adoptP99Ms: null, largestRequestBytes: docBytes, locateRatio, mapWritesDuringMove: 1, error: (err as Error).message.slice(0, 200) };
    }
    const current = (await writer.read())!;
    const started = await Subscribers.start(etcd.endpoint, key, procs, per);
    subs = started.subs;
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
    await subs.arm(current.version + 1);
    let next = await writer.write(switchOne(current, 12_345), current.version);
    await subs.adopted();
    // The measured switch.
    const snap = await writer.snapshot();
    received = 0;
    events = [];
    await subs.arm(next.version + 1);
    const after = switchOne(next, 54_321);
    const records = layout === 2 ? encodeRecords(after.toJSON()) : undefined;
    const largest = layout === 2 && snap.layout === 2
      ? [...records!].filter(([n, t]) => snap.records.get(n)?.text !== t).reduce((sum, [n, t]) => sum + keys.genPrefix(snap.root.gen).length + n.length + t.length, 300)
      : JSON.stringify(after.toJSON()).length;
    const casAt = epochNow();
    next = await writer.write(after, next.version);
    const { at, cpuMs } = await subs.adopted();
    const adopt = at.map((t) => t - casAt);
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
    // A move's progress: 3 writes; how many map versions does a subscriber see?
    await watcher.read();
    const versionBefore = (await watcher.read())!.version;
    let seenVersions = 0;
    watcher.watch(() => seenVersions++);
    const progress = new MoveProgressWriter(writer, 0);
    progress.track('bench-move', 'started');
    for (let i = 1; i <= 3; i++) {
      progress.note({ rowsCopied: i * 1000 });
      await progress.around(async () => undefined);
    }
    await progress.close();
    const versionAfter = (await watcher.read())!.version;
    await w.cancel();
    const n = procs * per;
    return {
      bytesPerSubscriber: received, eventLoopMsPerChange: round(median(walls))!, cpuMsPerChange: round(median(cpus))!,
      subscribers: n, adoptP99Ms: round(p99(adopt))!, adoptP50Ms: round(median(adopt))!, subscriberCpuMsPerChange: round(cpuMs / n)!,
      rssBytesPerSubscriber: Math.round(started.rssBytes.reduce((a, b) => a + b, 0) / n),
      heapBytesPerSubscriber: Math.round(started.heapBytes.reduce((a, b) => a + b, 0) / n),
      largestRequestBytes: largest, locateRatio, mapWritesDuringMove: Math.max(seenVersions, versionAfter - versionBefore),
    };
  } finally {
    await subs?.stop();
    await watcher.close();
    raw.close();
    await writer.close();
  }
}

const etcd = await LocalEtcd.start();
try {
  const base = fragmentedMap(30);
  const big = ShardMap.fromJSON(base);
  const small = ShardMap.fromJSON({ ...base, ranges: evenRanges(4096, 8, (i, r) => pair(i, r), true) });
  const [bigNs, smallNs] = locateNs([big, small]);
  const locateRatio = round(bigNs! / smallNs!)!;
  console.log(`locate(): ${bigNs!.toFixed(1)} ns at ${big.shardCount} shards, ${smallNs!.toFixed(1)} ns at ${small.shardCount}`);
  console.log(`map: ${SHARDS} shards, ${PAIRS} pairs, ${big.objectRanges().length} ranges after ${MOVES} one-shard moves; ${JSON.stringify(base).length} bytes as one document; ${PROCS} x ${PER} subscribers (old layout ${OLD_PROCS} x ${OLD_PER})`);
  const neu = await run(etcd, 2, base, locateRatio, PROCS, PER);
  console.log('record layout', JSON.stringify(neu));
  const old = await run(etcd, 1, base, locateRatio, OLD_PROCS, OLD_PER);
  console.log('single document', JSON.stringify(old));
  console.log(JSON.stringify({ new: neu, old }));
} finally {
  await etcd.destroy();
}
