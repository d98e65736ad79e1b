/**
 * A FileTopologyStore in its own process, driven by file-store.test.ts over stdin/stdout JSON
 * lines: {"id":1,"op":"write","map":{...},"expectedVersion":0} → {"id":1,"ok":true,"version":1}.
 * Ops: write, race (read-modify-CAS loop), hold-lock (take the lock file and keep it until killed).
 */
import { createInterface } from 'node:readline';
import { FileTopologyStore } from '../../src/topology/file/file-topology-store.js';
import { acquireFileLock } from '../../src/topology/file/file-lock.js';
import { ShardKitError } from '../../src/errors.js';
import { ShardMap } from '../../src/topology/shard-map.js';
import { raceIncrements } from '../conformance/topology-race.js';

const path = process.argv[2];
if (!path) throw new Error('usage: file-store-writer.ts <topology.json>');
const store = new FileTopologyStore({ path, lockTimeoutMs: 20_000, layout: process.argv[3] === '2' ? 2 : 1 });
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
      } else if (cmd.op === 'race') {
        reply({ id: cmd.id, ok: true, won: await raceIncrements(store, cmd.rounds!, cmd.tag!) });
      } else if (cmd.op === 'hold-lock') {
        await acquireFileLock(`${store.path}.lock`, { timeoutMs: 5000, staleMs: 600_000 });
        reply({ id: cmd.id, ok: true, pid: process.pid });
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
