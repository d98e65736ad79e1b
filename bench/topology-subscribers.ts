/**
 * One process of topology-scale.bench.ts's subscribers: COUNT EtcdTopologyStore instances (like
 * COUNT services: each its own watch state, map and listeners) watching one key. With
 * CLIENT=shared (the default) they share one etcd3 client, so one gRPC connection and one etcd
 * watch (src/topology/etcd/etcd-watch-hub.ts) serve the process's COUNT stores (a service process
 * has one client; this process stands for COUNT of them); CLIENT=own gives each store its own
 * client and watch. PROFILE=<dir> writes a CPU profile of each change. Talks JSON lines:
 *   stdout {"ready":n,"rssBytes","heapBytes"} all stores hold the map and watch it (heap after a GC)
 *   stdin  {"target":v}                      the next change the parent will write
 *   stdout {"armed":v}
 *   stdout {"adopted":[epoch ms...],"cpuMs"} every store's listener has a map of version >= v
 *          (performance.timeOrigin + now: comparable across processes on one machine), and the
 *          CPU this process spent from the target to the last adoption
 *   stdin  {"exit":true}
 */
import { Etcd3 } from 'etcd3';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { EtcdTopologyStore } from '../src/topology/etcd/etcd-topology-store.js';
import { Session } from 'node:inspector/promises';
import { writeFileSync } from 'node:fs';

const [endpoint, key, countText] = process.argv.slice(2);
const count = Number(countText);
const now = () => performance.timeOrigin + performance.now();
const say = (o: unknown) => process.stdout.write(`${JSON.stringify(o)}\n`);
const shared = process.env.CLIENT !== 'own' ? new Etcd3({ hosts: endpoint! }) : undefined;

const stores: EtcdTopologyStore[] = [];
// PROFILE=<dir>: a CPU profile of each change, from the target to the last adoption (one file per change).
const profileDir = process.env.PROFILE;
let session: Session | undefined;
let profiles = 0;
async function startProfile(): Promise<void> {
  if (profileDir === undefined) return;
  if (session === undefined) {
    session = new Session();
    session.connect();
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: 50 });
  }
  await session.post('Profiler.start');
}
async function stopProfile(): Promise<void> {
  if (session === undefined) return;
  const { profile } = await session.post('Profiler.stop');
  writeFileSync(`${profileDir}/subscribers-${process.pid}-${profiles++}.cpuprofile`, JSON.stringify(profile));
}
let target = Infinity;
let adopted: number[] = [];
let pending = 0;
let cpu0 = process.cpuUsage();
const done = new Set<number>();
const holding: Array<Promise<void>> = [];

for (let i = 0; i < count; i++) {
  const s = new EtcdTopologyStore({ endpoints: [endpoint!], key: key!, dialTimeoutMs: 120_000, ...(shared !== undefined ? { client: shared } : {}), onError: (err) => process.stderr.write(`subscriber ${i}: ${(err as Error).message}\n`) });
  let first: () => void = () => {};
  holding.push(new Promise<void>((r) => (first = r)));
  // The watch's first read (on connect) gives the store its map; no read before it.
  s.watch((m) => {
    first();
    if (m.version < target || done.has(i)) return;
    done.add(i);
    adopted.push(now());
    if (--pending === 0) {
      const c = process.cpuUsage(cpu0);
      void stopProfile().then(() => say({ adopted, cpuMs: (c.user + c.system) / 1000 }));
    }
  });
  stores.push(s);
  // A few at a time: each first read is the whole map.
  if (i % 10 === 9) await Promise.all(holding);
}
await Promise.all(holding);
(globalThis as { gc?: () => void }).gc?.();
say({ ready: count, rssBytes: process.memoryUsage().rss, heapBytes: process.memoryUsage().heapUsed });

for await (const line of createInterface({ input: process.stdin })) {
  const msg = JSON.parse(line) as { target?: number; exit?: boolean };
  if (msg.exit === true) break;
  if (msg.target !== undefined) {
    adopted = [];
    done.clear();
    pending = count;
    await startProfile();
    cpu0 = process.cpuUsage();
    target = msg.target;
    say({ armed: target });
  }
}
await Promise.all(stores.map((s) => s.close()));
shared?.close();
process.exit(0);
