/**
 * One process of topology-scale.bench.ts's subscribers: COUNT EtcdTopologyStore instances (each
 * its own gRPC client, like COUNT services) watching one key. Talks JSON lines:
 *   stdout {"ready":n,"rssBytes"}             all stores read the map and watch it
 *   stdin  {"target":v}                      the next change the parent will write
 *   stdout {"armed":v}
 *   stdout {"adopted":[epoch ms...],"cpuMs"} every store's listener has a map of version >= v
 *          (performance.timeOrigin + now: comparable across processes on one machine), and the
 *          CPU this process spent from the target to the last adoption
 *   stdin  {"exit":true}
 */
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { EtcdTopologyStore } from '../src/topology/etcd/etcd-topology-store.js';

const [endpoint, key, countText] = process.argv.slice(2);
const count = Number(countText);
const now = () => performance.timeOrigin + performance.now();
const say = (o: unknown) => process.stdout.write(`${JSON.stringify(o)}\n`);

const stores: EtcdTopologyStore[] = [];
let target = Infinity;
let adopted: number[] = [];
let pending = 0;
let cpu0 = process.cpuUsage();
const done = new Set<number>();

for (let i = 0; i < count; i++) {
  const s = new EtcdTopologyStore({ endpoints: [endpoint!], key: key!, dialTimeoutMs: 120_000, onError: (err) => process.stderr.write(`subscriber ${i}: ${(err as Error).message}\n`) });
  await s.read();
  s.watch((m) => {
    if (m.version < target || done.has(i)) return;
    done.add(i);
    adopted.push(now());
    if (--pending === 0) {
      const c = process.cpuUsage(cpu0);
      say({ adopted, cpuMs: (c.user + c.system) / 1000 });
    }
  });
  stores.push(s);
}
say({ ready: count, rssBytes: process.memoryUsage().rss });

for await (const line of createInterface({ input: process.stdin })) {
  const msg = JSON.parse(line) as { target?: number; exit?: boolean };
  if (msg.exit === true) break;
  if (msg.target !== undefined) {
    adopted = [];
    done.clear();
    pending = count;
    cpu0 = process.cpuUsage();
    target = msg.target;
    say({ armed: target });
  }
}
await Promise.all(stores.map((s) => s.close()));
process.exit(0);
