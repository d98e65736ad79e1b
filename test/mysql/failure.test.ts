import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { isShardKitError } from '../../src/errors.js';
import { devUp, type DevCluster } from '../../src/ops/dev-cluster.js';
import { ShardKit } from '../../src/kit/shard-kit.js';
import { startTestCluster } from './cluster-fixture.js';
import { processAlive } from './helpers.js';

// Bounded timeouts for this test; a request may take at most about connect + query timeout.
const CONNECT_TIMEOUT_MS = 1000;
const QUERY_TIMEOUT_MS = 1500;
// The slack is wide on purpose: the test shows that a request fails instead of hanging (a TCP
// timeout is minutes), not how fast a loaded machine runs it.
const BOUND_MS = CONNECT_TIMEOUT_MS + QUERY_TIMEOUT_MS + 10_000;

interface Outcome {
  shard: number;
  ok: boolean;
  code?: string;
  message?: string;
  ms: number;
  at: number;
}

describe('a master that dies or hangs under load (real mariadbd, kill -9 / SIGSTOP)', () => {
  let cluster: DevCluster;
  let dir: string;
  let stop: () => Promise<void>;
  let kit: ShardKit;
  // Shards 0..3 live on MySQL001A, 4..7 on MySQL002A.
  let onA: bigint;
  let onB: bigint;

  before(async () => {
    ({ cluster, dir, stop } = await startTestCluster({ pairs: 2, shards: 8, prefix: 'shardkit-fail-' }));
    const config = JSON.parse(JSON.stringify(cluster.config())) as ReturnType<DevCluster['config']>;
    if (config.storage.backend !== 'mysql') throw new Error('not mysql');
    config.storage.connectTimeoutMs = CONNECT_TIMEOUT_MS;
    config.storage.queryTimeoutMs = QUERY_TIMEOUT_MS;
    kit = await ShardKit.open({ config, dataDir: dir });
    onA = (await kit.objects.create('board', { name: 'on A' }, { shard: 1 })).id;
    onB = (await kit.objects.create('board', { name: 'on B' }, { shard: 5 })).id;
  });

  after(async () => {
    await kit?.close();
    await stop?.();
  });

  /** Runs `workers` concurrent get/create loops on both hosts until `until` resolves. */
  async function load(until: Promise<void>, workers = 6): Promise<Outcome[]> {
    const out: Outcome[] = [];
    let done = false;
    void until.then(() => {
      done = true;
    });
    const one = async (shard: number, fn: () => Promise<unknown>) => {
      const t = Date.now();
      try {
        await fn();
        out.push({ shard, ok: true, ms: Date.now() - t, at: t });
      } catch (err) {
        out.push({ shard, ok: false, ms: Date.now() - t, at: t, ...(isShardKitError(err) ? { code: err.code, message: err.message } : { code: 'NON_SHARDKIT', message: String(err) }) });
      }
    };
    await Promise.all(Array.from({ length: workers }, async (_, w) => {
      while (!done) {
        const id = w % 2 === 0 ? onA : onB;
        const shard = w % 2 === 0 ? 1 : 5;
        await one(shard, () => kit.objects.get(id));
        await one(shard, () => kit.objects.create('pin', { w }, { shard }));
        await sleep(5);
      }
    }));
    return out;
  }

  function checkOutage(outcomes: Outcome[], since: number): string {
    const deadA = outcomes.filter((o) => o.shard === 1 && o.at >= since);
    const b = outcomes.filter((o) => o.shard === 5 && o.at >= since);
    assert.ok(deadA.length > 0 && b.length > 0, 'load ran on both hosts during the outage');
    for (const o of deadA.filter((x) => !x.ok)) {
      assert.equal(o.code, 'SHARD_UNAVAILABLE', o.message);
      assert.match(o.message!, /shard 1 \(db00001 on MySQL001A\)/);
      assert.ok(o.ms < BOUND_MS, `a failing request took ${o.ms} ms (bound ${BOUND_MS} ms)`);
    }
    assert.ok(deadA.some((x) => !x.ok), 'requests to the dead master fail');
    const bad = b.filter((x) => !x.ok);
    assert.deepEqual(bad, [], 'requests to the other host are unaffected');
    const failed = deadA.filter((x) => !x.ok);
    return `dead host: ${failed.length} failed requests, max ${Math.max(...failed.map((x) => x.ms))} ms; other host: ${b.length} ok`;
  }

  async function waitRecovered(): Promise<void> {
    const deadline = Date.now() + 60_000;
    for (;;) {
      try {
        assert.equal((await kit.objects.get(onA)).data.name, 'on A');
        await kit.objects.create('pin', { after: 'recovery' }, { shard: 1 });
        return;
      } catch (err) {
        if (!isShardKitError(err, 'SHARD_UNAVAILABLE') || Date.now() > deadline) throw err;
        await sleep(100);
      }
    }
  }

  test('an object grown past 8 MiB by merge patches is refused with PAYLOAD_TOO_LARGE, and its host stays up for every other shard', async () => {
    // Before: the statement went past max_allowed_packet, the server dropped the connection, and
    // the host read as down (every shard of MySQL001A answered SHARD_UNAVAILABLE for a while).
    const big = await kit.objects.create('pin', { parts: [] }, { shard: 2 });
    const chunk = 'y'.repeat(900 * 1024);
    let refused: unknown;
    for (let i = 0; i < 20 && refused === undefined; i++) {
      await kit.objects.patch(big.id, { [`p${i}`]: chunk }).catch((err: unknown) => (refused = err));
    }
    assert.ok(isShardKitError(refused, 'PAYLOAD_TOO_LARGE'), `the patch past the limit: ${String(refused)}`);
    assert.deepEqual((await kit.objects.get(onA)).data, { name: 'on A' });
    assert.equal(Object.keys((await kit.objects.get(big.id)).data).length, 1 + 9, 'the refused patch changed nothing');
    await kit.objects.create('pin', { after: true }, { shard: 1 });
  });

  test('close() with 200 creates in flight: each is written or refused with CLOSED, none fails as INTERNAL', async () => {
    const config = JSON.parse(JSON.stringify(cluster.config())) as ReturnType<DevCluster['config']>;
    const other = await ShardKit.open({ config, dataDir: dir });
    const ops = Array.from({ length: 200 }, (_, i) => other.objects.create('pin', { closing: i }, { shard: i % 8 }).then((o) => o.id, (err: unknown) => err));
    await other.close();
    const outcomes = await Promise.all(ops);
    const odd = outcomes.filter((o) => typeof o !== 'bigint' && !isShardKitError(o, 'CLOSED'));
    assert.deepEqual(odd.map(String), [], 'every create is written or CLOSED');
    for (const id of outcomes.filter((o): o is bigint => typeof o === 'bigint')) assert.equal(((await kit.objects.get(id)).data as { closing: number }).closing >= 0, true);
  });

  test('kill -9: its shards fail fast with 503 SHARD_UNAVAILABLE naming the shard, the other host is fine, then it recovers without a restart', async (t) => {
    const master = cluster.instance('MySQL001A');
    const pid = master.pid!;
    let killedAt = 0;
    let release!: () => void;
    const until = new Promise<void>((r) => (release = r));
    const running = load(until);
    await sleep(300);
    killedAt = Date.now();
    process.kill(pid, 'SIGKILL');
    while (processAlive(pid)) await sleep(10);
    await sleep(2500);
    release();
    const outcomes = await running;
    t.diagnostic(checkOutage(outcomes, killedAt + 50));
    const err = outcomes.find((o) => o.shard === 1 && !o.ok)!;
    assert.equal(err.code, 'SHARD_UNAVAILABLE');

    // Restart the server the way an operator would; the same ShardKit instance recovers.
    const up = await devUp({ dir, skipInit: true });
    assert.deepEqual(up.started, ['MySQL001A']);
    await waitRecovered();
  });

  test('a hung master (SIGSTOP): requests fail within the connect + query timeouts, then recover on SIGCONT', async (t) => {
    const pid = cluster.instance('MySQL001A').pid!;
    let release!: () => void;
    const until = new Promise<void>((r) => (release = r));
    const running = load(until);
    await sleep(300);
    const stoppedAt = Date.now();
    process.kill(pid, 'SIGSTOP');
    try {
      await sleep(QUERY_TIMEOUT_MS + CONNECT_TIMEOUT_MS + 1500);
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    release();
    const outcomes = await running;
    t.diagnostic(checkOutage(outcomes, stoppedAt + 50));
    await waitRecovered();
  });
});
