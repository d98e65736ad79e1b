/**
 * An EtcdTopologyStore in its own process, driven by etcd-store.test.ts over stdin/stdout JSON
 * lines (the protocol of file-store-writer.ts): {"id":1,"op":"write","map":{...},"expectedVersion":0}
 * → {"id":1,"ok":true,"version":1}. Ops: write, race (read-modify-CAS loop), churn (write maps in turn until killed).
 */
import { createInterface } from 'node:readline';
import { EtcdTopologyStore } from '../../src/topology/etcd/etcd-topology-store.js';
import { ShardKitError } from '../../src/errors.js';
import { ShardMap } from '../../src/topology/shard-map.js';
import { raceIncrements } from '../conformance/topology-race.js';

const [endpoint, key] = process.argv.slice(2);
if (!endpoint || !key) throw new Error('usage: etcd-store-writer.ts <endpoint> <key>');
const store = new EtcdTopologyStore({ endpoints: [endpoint], key });
const reply = (msg: object): void => {
  process.stdout.write(`${JSON.stringify(msg)}\n`);
};

const lines = createInterface({ input: process.stdin });
lines.on('line', (line) => {
  const cmd = JSON.parse(line) as { id: number; op: string; map?: unknown; expectedVersion?: number; rounds?: number; tag?: string };
  void (async () => {
    try {
      if (cmd.op === 'write') {
        const stored = await store.write(ShardMap.fromJSON(cmd.map), cmd.expectedVersion!);
        reply({ id: cmd.id, ok: true, version: stored.version });
      } else if (cmd.op === 'churn') {
        // Writes the given maps in turn, forever, one line per win: the test kills it -9 mid-write.
        const maps = (cmd as { maps?: unknown[] }).maps!;
        for (let i = 0; ; i++) {
          const current = await store.read();
          const stored = await store.write(ShardMap.fromJSON(maps[i % maps.length]), current?.version ?? 0);
          reply({ id: cmd.id, ok: true, version: stored.version, index: i % maps.length });
        }
      } else if (cmd.op === 'race') {
        reply({ id: cmd.id, ok: true, won: await raceIncrements(store, cmd.rounds!, cmd.tag!) });
      } else {
        reply({ id: cmd.id, ok: false, code: 'UNKNOWN_OP', message: cmd.op });
      }
    } catch (err) {
      const code = err instanceof ShardKitError ? err.code : 'ERROR';
      reply({ id: cmd.id, ok: false, code, message: (err as Error).message });
    }
  })();
});
lines.on('close', () => {
  void store.close().then(() => process.exit(0));
});
reply({ id: 0, ready: true });
