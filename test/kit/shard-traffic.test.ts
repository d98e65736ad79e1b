/**
 * Requests per shard (src/kit/shard-traffic.ts): the counters themselves, then a seeded random
 * run of kit calls against an oracle that counts what each call must route where, and the object
 * counts of kit.shardStats() against the objects made.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ShardTraffic } from '../../src/kit/shard-traffic.js';
import { makeKit } from './kit-fixture.js';
import { mulberry32 } from '../../src/util/prng.js';

test('counters: reads and writes per shard, growth past the first size, nothing outside 0..65535', () => {
  const t = new ShardTraffic(4, 0);
  t.count(0, false);
  t.count(0, true);
  t.count(3, false);
  t.count(3, false);
  t.count(100, true); // past the first size: the arrays grow
  t.count(65535, false);
  t.count(65536, false); // not a shard: ignored
  t.count(-1, true);
  const v = t.view(0, 3, 0);
  assert.deepEqual(v.reads, [1, 0, 0, 2]);
  assert.deepEqual(v.writes, [1, 0, 0, 0]);
  assert.deepEqual(t.view(100, 100, 0).writes, [1]);
  assert.deepEqual(t.view(65535, 65535, 0).reads, [1]);
  assert.deepEqual(t.totals(), { reads: 4, writes: 2 });
  assert.equal(t.since, 0);
});

test('rates: none on the first read, then calls per second since an older read of the counters', () => {
  const t = new ShardTraffic(8, 0);
  const first = t.view(0, 1, 1_000);
  assert.equal(first.rates, undefined);
  assert.equal(first.rateSeconds, undefined);
  for (let i = 0; i < 10; i++) t.count(1, i % 2 === 0);
  const second = t.view(0, 1, 6_000);
  assert.deepEqual(second.rates, [0, 2]);
  assert.equal(second.rateSeconds, 5);
  // A read within the snapshot interval measures against the same older snapshot.
  t.count(1, false);
  const third = t.view(0, 1, 7_000);
  assert.deepEqual(third.rates, [0, 1.83]);
  assert.equal(third.rateSeconds, 6);
  // Long after: measured from the youngest snapshot older than the window (one call in 24 s)...
  const late = t.view(0, 1, 30_000);
  assert.deepEqual(late.rates, [0, 0.04]);
  assert.equal(late.rateSeconds, 24);
  // ...and once the counters are read again a few seconds later, over those seconds: idle is 0.
  const idle = t.view(0, 1, 33_000);
  assert.deepEqual(idle.rates, [0, 0]);
  assert.equal(idle.rateSeconds, 3);
});

test('model: seeded random kit calls are counted on the shard they route to, reads and writes apart', async () => {
  const seed = Number(process.env.SHARDKIT_SEED ?? Date.now() % 1_000_000);
  console.log(`shard traffic model seed ${seed} (SHARDKIT_SEED=${seed} replays it)`);
  const random = mulberry32(seed);
  const f = makeKit({ random });
  try {
    const kit = f.kit;
    await kit.ready();
    const shards = (await kit.shardMap()).shardCount;
    const reads = new Array<number>(shards).fill(0);
    const writes = new Array<number>(shards).fill(0);
    const objects = new Array<number>(shards).fill(0);
    const live: Array<{ id: string; shard: number }> = [];
    const pick = () => live[Math.floor(random() * live.length)]!;
    for (let step = 0; step < 300; step++) {
      const r = random();
      if (live.length < 3 || r < 0.25) {
        const shard = Math.floor(random() * shards);
        const o = await kit.objects.create('user', { step }, { shard });
        live.push({ id: o.id.toString(), shard });
        writes[shard]!++;
        objects[shard]!++;
      } else if (r < 0.45) {
        const o = pick();
        await kit.objects.get(o.id);
        reads[o.shard]!++;
      } else if (r < 0.55) {
        // A multi-get is one call per shard it reads.
        const some = [pick(), pick(), pick()];
        await kit.objects.getMany(some.map((o) => o.id));
        for (const s of new Set(some.map((o) => o.shard))) reads[s]!++;
      } else if (r < 0.65) {
        const o = pick();
        await kit.objects.patch(o.id, { step });
        writes[o.shard]!++;
      } else if (r < 0.7) {
        const i = Math.floor(random() * live.length);
        const [o] = live.splice(i, 1);
        await kit.objects.delete(o!.id);
        writes[o!.shard]!++; // soft delete: the row stays, so the object count does not change
      } else if (r < 0.82) {
        const from = pick();
        await kit.mappings.add('user_follows_user', from.id, pick().id);
        writes[from.shard]!++;
      } else if (r < 0.9) {
        const from = pick();
        await kit.mappings.list('user_follows_user', from.id, { limit: 5 });
        reads[from.shard]!++;
      } else if (r < 0.95) {
        const from = pick();
        await kit.mappings.count('user_follows_user', from.id);
        reads[from.shard]!++;
      } else {
        const from = pick();
        await kit.mappings.remove('user_follows_user', from.id, pick().id);
        writes[from.shard]!++;
      }
    }
    // Bad calls never reach a shard and are not counted.
    await assert.rejects(kit.objects.get('not-an-id'));
    await assert.rejects(kit.mappings.list('no_such_mapping', live[0]!.id));

    const stats = await kit.shardStats({ refresh: true });
    const flat = (key: 'reads' | 'writes' | 'objects') => stats.ranges.flatMap((r) => r[key]);
    assert.deepEqual(flat('reads'), reads, `reads per shard (seed ${seed})`);
    assert.deepEqual(flat('writes'), writes, `writes per shard (seed ${seed})`);
    assert.deepEqual(flat('objects'), objects, `objects per shard (seed ${seed})`);
    assert.deepEqual(stats.totals, { reads: reads.reduce((a, b) => a + b, 0), writes: writes.reduce((a, b) => a + b, 0), objects: objects.reduce((a, b) => a + b, 0) });
    // Counting objects is not a request.
    const again = await kit.shardStats({ refresh: true });
    assert.deepEqual(again.totals, stats.totals);
    // Ranges follow the map: hosts and shard numbers.
    const map = await kit.shardMap();
    assert.deepEqual(stats.ranges.map((r) => [r.range, r.master]), map.objectRanges().map((r) => [r.range, r.master]));
    // A slice of the map, cut at its edges.
    const part = await kit.shardStats({ first: 6, last: 9 });
    assert.deepEqual(part.ranges.map((r) => r.range), [[6, 7], [8, 9]]);
    assert.deepEqual(part.ranges.flatMap((r) => r.reads), reads.slice(6, 10));
  } finally {
    await f.cleanup();
  }
});

test('shardStats refuses a bad slice with a stable code', async () => {
  const f = makeKit();
  try {
    await assert.rejects(f.kit.shardStats({ first: 5, last: 2 }), { code: 'INVALID_ARGUMENT' });
    await assert.rejects(f.kit.shardStats({ first: -1 }), { code: 'INVALID_ARGUMENT' });
    await assert.rejects(f.kit.shardStats({ first: 1.5 }), { code: 'INVALID_ARGUMENT' });
    await assert.rejects(f.kit.shardStats({ last: 16 }), { code: 'UNKNOWN_SHARD' });
  } finally {
    await f.cleanup();
  }
});
