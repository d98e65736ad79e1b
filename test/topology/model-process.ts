/**
 * A process of topology-model.test.ts's kill -9 run, on a real etcd (record layout):
 *   writer <endpoint> <key> <seed> <tag>: random model edits (model-edits.ts) until killed; before
 *     each compare-and-set one line {"intent":{"from":v,"map":…}}, after a win {"won":v,"map":…}
 *     (the test's ledger: a write killed in flight is the last intent, landed or not).
 *   watcher <endpoint> <key>: reads the map, then one line {"heard":v,"map":…} per map heard.
 */
import { EtcdTopologyStore } from '../../src/topology/etcd/etcd-topology-store.js';
import type { ShardMap, ShardMapJson } from '../../src/topology/shard-map.js';
import type { TopologyStore } from '../../src/topology/topology-store.js';
import { mulberry32 } from '../../src/util/prng.js';
import { writer } from './model-edits.js';

const [role, endpoint, key, seedText, tag] = process.argv.slice(2);
const say = (o: unknown) => process.stdout.write(`${JSON.stringify(o)}\n`);
const store = new EtcdTopologyStore({ endpoints: [endpoint!], key: key!, dialTimeoutMs: 30_000 });

if (role === 'watcher') {
  const first = (await store.read())!;
  say({ heard: first.version, map: first.toJSON(), read: true });
  store.watch((m) => say({ heard: m.version, map: m.toJSON() }));
} else {
  const logged: TopologyStore = {
    read: () => store.read(),
    write: async (next: ShardMap, expected: number) => {
      say({ intent: { from: expected, map: next.toJSON() } });
      return store.write(next, expected);
    },
    watch: (l) => store.watch(l),
    close: () => store.close(),
  };
  // The writer's oracle: every win is a line (the test keeps the ledger).
  const ledger = new (class extends Map<number, ShardMapJson> {
    override set(version: number, map: ShardMapJson): this {
      say({ won: version, map });
      return super.set(version, map);
    }
  })();
  await writer(logged, mulberry32(Number(seedText)), 1_000_000, Number(tag), ledger);
}
