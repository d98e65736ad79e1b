/**
 * The stores of a process that share an etcd3 client share one watch of the map (#30: etcd sends
 * a change once per process, not once per store), and each is still its own subscriber: its own
 * map, its own listeners, its own lifetime. Real etcd: the server's own watcher gauge counts the
 * watches it serves.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Etcd3 } from 'etcd3';
import { EtcdTopologyStore, type ShardMap } from '../../src/index.js';
import { EtcdWatchHub } from '../../src/topology/etcd/etcd-watch-hub.js';
import { sampleMap } from '../conformance/topology-suite.js';
import { LocalEtcd } from './etcd-server.js';

let etcd: LocalEtcd;
before(async () => {
  etcd = await LocalEtcd.start();
});
after(async () => {
  await etcd?.destroy();
});

/** Watches etcd serves right now (its mvcc watcher gauge, from /metrics on the client port). */
async function serverWatchers(): Promise<number> {
  const text = await (await fetch(`${etcd.endpoint}/metrics`)).text();
  const line = text.split('\n').find((l) => /^etcd_debugging_mvcc_watcher_total /.test(l));
  assert.ok(line !== undefined, 'etcd exposes etcd_debugging_mvcc_watcher_total');
  return Number(line.split(' ')[1]);
}

/** Resolves when `cond` holds, checking after each event of `store`'s listener or a short poll. */
async function until(what: string, cond: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < 2000; i++) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  assert.fail(`timed out waiting for ${what}`);
}

test('stores sharing an etcd3 client share one server watch; each keeps its own map and listeners, and one leaving does not deafen the others', async () => {
  const key = `/hub-test/${process.pid}/topology`;
  const writer = new EtcdTopologyStore({ endpoints: [etcd.endpoint], key, dialTimeoutMs: 20_000 });
  const client = new Etcd3({ hosts: etcd.endpoint });
  const stores = [0, 1, 2].map(() => new EtcdTopologyStore({ endpoints: [etcd.endpoint], key, client, dialTimeoutMs: 20_000 }));
  try {
    await writer.write(sampleMap('a', 1), 0);
    const base = await serverWatchers();
    const seen: ShardMap[][] = stores.map(() => []);
    const stops = stores.map((s, i) => s.watch((m) => {
      seen[i]!.push(m);
      if (i === 0) throw new Error('store 0 listener fails'); // reported to store 0's onError only
    }));
    await until('every store holding version 1', () => seen.every((list) => list.some((m) => m.version === 1)));
    assert.equal(EtcdWatchHub.members(client, key, `${key}/n`), 3);
    assert.equal(await serverWatchers(), base + 1, 'one watch on the server for the three stores');

    await writer.write((await writer.read())!, 1);
    await until('every store holding version 2', () => seen.every((list) => list.some((m) => m.version === 2)));
    // Each store made its own map from the shared response (no object shared between subscribers).
    const v2 = seen.map((list) => list.find((m) => m.version === 2)!);
    assert.notEqual(v2[0], v2[1]);
    assert.notEqual(v2[1], v2[2]);

    // Store 1 stops listening, store 0 closes: store 2 still follows, on the same one watch.
    stops[1]!();
    await stores[0]!.close();
    assert.equal(EtcdWatchHub.members(client, key, `${key}/n`), 1);
    await writer.write((await writer.read())!, 2);
    await until('store 2 holding version 3', () => seen[2]!.some((m) => m.version === 3));
    assert.equal(seen[1]!.some((m) => m.version === 3), false, 'a store that stopped listening gets nothing');
    assert.deepEqual(seen[2]!.map((m) => m.version), [1, 2, 3], 'in version order, none missed');

    // The last store leaving closes the shared watch.
    stops[2]!();
    assert.equal(EtcdWatchHub.members(client, key, `${key}/n`), 0);
    await until('the server watch closed', async () => (await serverWatchers()) === base);
  } finally {
    await Promise.all(stores.map((s) => s.close()));
    client.close();
    await writer.close();
  }
});
