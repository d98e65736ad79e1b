/**
 * heal's acting lease in etcd (real etcd): one holder at a time; a holder killed with -9 is
 * replaced once its lease expires; a holder cut off from etcd hears that it lost the lease (and
 * stops acting) and is elected again once etcd is back.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Etcd3 } from 'etcd3';
import { EtcdActingLease } from '../../src/ops/heal/etcd-lease.js';
import { LocalEtcd } from '../topology/etcd-server.js';

const MODULE = fileURLToPath(new URL('../../src/ops/heal/etcd-lease.ts', import.meta.url));
let etcd: LocalEtcd;
before(async () => {
  etcd = await LocalEtcd.start();
});
after(async () => {
  await etcd?.destroy();
});

async function leader(name: string): Promise<string | undefined> {
  const client = new Etcd3({ hosts: [etcd.endpoint] });
  try {
    return await client.election(name).leader();
  } finally {
    client.close();
  }
}

function watcher() {
  const events: string[] = [];
  const waiters: Array<{ want: string; resolve: () => void }> = [];
  const push = (e: string) => {
    events.push(e);
    for (const w of [...waiters]) if (w.want === e) {
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve();
    }
  };
  return {
    events,
    hooks: { onElected: () => push('elected'), onLost: () => push('lost') },
    next: (want: string, after = events.length) => new Promise<void>((resolve) => (events.slice(after).includes(want) ? resolve() : waiters.push({ want, resolve }))),
  };
}

test('one holder; kill -9 of the holder: the other supervisor is elected once the lease expires', async () => {
  const name = 'shardkit-heal:/test/kill';
  // The first holder is another process, so it can die as a supervisor does.
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', `
    const { EtcdActingLease } = await import(${JSON.stringify(MODULE)});
    await EtcdActingLease.open({ endpoints: [${JSON.stringify(etcd.endpoint)}], name: ${JSON.stringify(name)}, ttlSeconds: 1, id: 'first' }, { onElected: () => console.log('elected'), onLost: () => {} });
    setInterval(() => {}, 1000);`], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve) => child.stdout!.on('data', (b: Buffer) => b.toString().includes('elected') && resolve()));
  assert.equal(await leader(name), 'first');
  const w = watcher();
  const second = await EtcdActingLease.open({ endpoints: [etcd.endpoint], name, ttlSeconds: 1, id: 'second' }, w.hooks);
  try {
    assert.deepEqual(w.events, [], 'not elected while the first holds the lease');
    assert.equal(await leader(name), 'first');
    child.kill('SIGKILL');
    await w.next('elected');
    assert.equal(await leader(name), 'second');
  } finally {
    child.kill('SIGKILL');
    await second.close();
  }
  // Resigning hands over at once: nobody holds it now.
  assert.equal(await leader(name), undefined);
});

test('a holder cut off from etcd hears it lost the lease, and is elected again once etcd is back', async () => {
  const name = 'shardkit-heal:/test/cut';
  const w = watcher();
  const lease = await EtcdActingLease.open({ endpoints: [etcd.endpoint], name, ttlSeconds: 1, id: 'only' }, w.hooks);
  try {
    await w.next('elected');
    const mark = w.events.length;
    await etcd.stop();
    await w.next('lost', mark);
    await etcd.restart();
    await w.next('elected', mark);
    assert.equal(await leader(name), 'only');
  } finally {
    await lease.close();
  }
});
