import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { instagramId, INSTAGRAM_EPOCH, ShardKitError } from '../../src/index.js';

const EPOCH = 1314220021721;
const MAX_MS = 2 ** 41 - 1;

/** The PL/pgSQL next_id() from the seed, in BigInt: (now_millis - our_epoch) << 23 | shard_id << 10 | seq_id % 1024. */
function plpgsqlNextId(nowMillis: bigint, shardId: bigint, seqId: bigint, ourEpoch = BigInt(EPOCH)): bigint {
  let result = (nowMillis - ourEpoch) << 23n;
  result = result | (shardId << 10n);
  result = result | (seqId % 1024n);
  return result;
}

function errorOf(fn: () => unknown): ShardKitError {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof ShardKitError, `expected ShardKitError, got ${String(err)}`);
    return err;
  }
  assert.fail('expected an error');
}

test('the default epoch is Instagram\'s', () => {
  assert.equal(INSTAGRAM_EPOCH, EPOCH);
});

test('encode matches the PL/pgSQL arithmetic, and decode inverts it', () => {
  fc.assert(fc.property(
    fc.integer({ min: 0, max: MAX_MS }),
    fc.integer({ min: 0, max: 8191 }),
    fc.bigInt({ min: 1n, max: (1n << 40n) }),
    (ms, shard, seq) => {
      const expected = plpgsqlNextId(BigInt(EPOCH + ms), BigInt(shard), seq);
      const id = instagramId.encode({ ms, shard, sequence: Number(seq) });
      assert.equal(id, expected);
      const d = instagramId.decode(id);
      assert.equal(d.ms, ms);
      assert.equal(d.unixMs, EPOCH + ms);
      assert.equal(d.date.getTime(), EPOCH + ms);
      assert.equal(d.shard, shard);
      assert.equal(d.sequence, Number(seq % 1024n));
      assert.deepEqual(instagramId.decode(id.toString()), d);
    },
  ), { numRuns: 5000 });
});

test('a worked example: shard 5 at 2011-09-01T00:00:00Z, sequence 1', () => {
  const now = Date.UTC(2011, 8, 1);
  const id = plpgsqlNextId(BigInt(now), 5n, 1n);
  const d = instagramId.decode(id);
  assert.deepEqual({ ms: d.ms, unixMs: d.unixMs, shard: d.shard, sequence: d.sequence }, { ms: now - EPOCH, unixMs: now, shard: 5, sequence: 1 });
  assert.equal(d.date.toISOString(), '2011-09-01T00:00:00.000Z');
});

test('decoded parts: date is a fresh Date each time; JSON shows it as ISO 8601', () => {
  const d = instagramId.decode(instagramId.encode({ ms: 5000, shard: 2, sequence: 9 }));
  assert.notEqual(d.date, d.date);
  assert.equal(d.date.getTime(), EPOCH + 5000);
  assert.deepEqual(JSON.parse(JSON.stringify(d)), { ms: 5000, unixMs: EPOCH + 5000, date: new Date(EPOCH + 5000).toISOString(), shard: 2, sequence: 9 });
});

test('decode with a custom epoch shifts only the time', () => {
  const id = instagramId.encode({ ms: 1000, shard: 7, sequence: 3 });
  const d = instagramId.decode(id, 0);
  assert.equal(d.ms, 1000);
  assert.equal(d.unixMs, 1000);
  assert.equal(d.date.toISOString(), '1970-01-01T00:00:01.000Z');
  for (const bad of [-1, 1.5, NaN]) assert.equal(errorOf(() => instagramId.decode(id, bad)).code, 'INVALID_ARGUMENT');
});

test('every 64-bit value is a valid instagram id; malformed input is INVALID_ID', () => {
  const max = instagramId.decode('18446744073709551615');
  assert.deepEqual([max.ms, max.shard, max.sequence], [MAX_MS, 8191, 1023]);
  for (const bad of ['', '-1', '18446744073709551616', '1.0', 'abc', ' 5']) assert.equal(errorOf(() => instagramId.decode(bad)).code, 'INVALID_ID', bad);
  for (const bad of [{ ms: -1, shard: 0, sequence: 0 }, { ms: 2 ** 41, shard: 0, sequence: 0 }, { ms: 0, shard: 8192, sequence: 0 }, { ms: 0, shard: 0, sequence: -1 }, { ms: 0.5, shard: 0, sequence: 0 }]) {
    assert.equal(errorOf(() => instagramId.encode(bad)).code, 'INVALID_ARGUMENT', JSON.stringify(bad));
  }
});

test('generator options are validated', () => {
  for (const shard of [-1, 8192, 1.5, NaN]) assert.equal(errorOf(() => instagramId.generator({ shard })).code, 'INVALID_ARGUMENT');
  assert.equal(errorOf(() => instagramId.generator({ shard: 0, epoch: -5 })).code, 'INVALID_ARGUMENT');
  assert.equal(errorOf(() => instagramId.generator({ shard: 0, maxBackwardsMs: -1 })).code, 'INVALID_ARGUMENT');
  assert.equal(instagramId.generator({ shard: 8191 }).shard, 8191);
});

test('a clock before the epoch or past 41 bits is refused, never wrapped', () => {
  assert.equal(errorOf(() => instagramId.generator({ shard: 1, clock: () => EPOCH - 1 }).next()).code, 'INVALID_ARGUMENT');
  assert.equal(errorOf(() => instagramId.generator({ shard: 1, clock: () => EPOCH + 2 ** 41 }).next()).code, 'INVALID_ARGUMENT');
  assert.equal(errorOf(() => instagramId.generator({ shard: 1, clock: () => NaN }).next()).code, 'INVALID_ARGUMENT');
  let reads = 0;
  const g = instagramId.generator({ shard: 1, clock: () => EPOCH + MAX_MS + (++reads > 1100 ? 1 : 0) });
  assert.equal(instagramId.decode(g.next()).ms, MAX_MS);
  // The last millisecond's 1024 ids are used up and the next millisecond no longer fits in 41 bits.
  for (let i = 1; i < 1024; i++) g.next();
  assert.equal(errorOf(() => g.next()).code, 'INVALID_ARGUMENT');
});

test('the real clock: ids carry the current time and this shard', () => {
  const before = Date.now();
  const g = instagramId.generator({ shard: 4242 });
  const id = g.next();
  const d = instagramId.decode(id);
  assert.ok(d.unixMs >= before && d.unixMs <= Date.now());
  assert.equal(d.shard, 4242);
  assert.equal(d.sequence, 0);
  assert.ok(g.next() > id);
});

test('1024 ids in one millisecond use it up; the generator waits for the next one', () => {
  let calls = 0;
  // Frozen at t0 for 5000 reads, then t0 + 1.
  const t0 = EPOCH + 1_000_000;
  const g = instagramId.generator({ shard: 9, clock: () => (++calls <= 5000 ? t0 : t0 + 1) });
  const ids = Array.from({ length: 1025 }, () => g.next());
  const parts = ids.map((id) => instagramId.decode(id));
  parts.slice(0, 1024).forEach((p, i) => assert.deepEqual([p.ms, p.sequence], [1_000_000, i]));
  assert.deepEqual([parts[1024]!.ms, parts[1024]!.sequence, parts[1024]!.shard], [1_000_001, 0, 9]);
  assert.ok(calls > 5000, 'it polled the clock until the millisecond changed');
});

test('a fractional clock (performance.now style) is floored, not mixed into the bits', () => {
  let t = EPOCH + 500.25;
  const g = instagramId.generator({ shard: 3, clock: () => (t += 0.3) });
  let prev = -1n;
  for (let i = 0; i < 100; i++) {
    const id = g.next();
    const d = instagramId.decode(id);
    assert.ok(Number.isInteger(d.ms) && d.shard === 3 && d.sequence < 1024);
    assert.ok(id > prev);
    prev = id;
  }
});

test('small backward steps are waited out; larger ones throw CLOCK_MOVED_BACKWARDS (503) and generate nothing', () => {
  const script = [1000, 1000, 995, 995, 995, 999, 1000, 1001, 950, 1002];
  let i = 0;
  const g = instagramId.generator({ shard: 1, clock: () => EPOCH + script[Math.min(i++, script.length - 1)]! });
  const a = instagramId.decode(g.next());
  const b = instagramId.decode(g.next());
  assert.deepEqual([a.ms, a.sequence, b.ms, b.sequence], [1000, 0, 1000, 1]);
  const c = instagramId.decode(g.next()); // reads 995, 995, 995, 999, 1000: waited out, same millisecond
  assert.deepEqual([c.ms, c.sequence], [1000, 2]);
  assert.equal(instagramId.decode(g.next()).ms, 1001);
  const err = errorOf(() => g.next()); // 950: 51 ms back
  assert.equal(err.code, 'CLOCK_MOVED_BACKWARDS');
  assert.equal(err.status, 503);
  assert.equal(instagramId.decode(g.next()).ms, 1002);

  const strict = instagramId.generator({ shard: 1, maxBackwardsMs: 0, clock: (() => { const s = [10, 9, 11]; let k = 0; return () => EPOCH + s[k++]!; })() });
  strict.next();
  assert.equal(errorOf(() => strict.next()).code, 'CLOCK_MOVED_BACKWARDS');
  assert.equal(instagramId.decode(strict.next()).ms, 11);
});

test('10^6 ids under a clock that stalls, jumps backwards and forwards: strictly increasing, never a duplicate', () => {
  // A deterministic hostile clock: advances ~1 ms per 100 reads, sometimes freezes (forcing the
  // 1024-per-ms wait), sometimes steps back a little (waited out) or a lot (throws), sometimes leaps ahead.
  let seed = 12345;
  const rand = (): number => {
    // mulberry32: a small seeded PRNG, so a failure reproduces.
    seed = (seed + 0x6d2b79f5) | 0;
    let x = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 2 ** 32;
  };
  let t = EPOCH + 10_000_000;
  let frozen = 0;
  let reads = 0;
  const clock = (): number => {
    reads++;
    if (frozen > 0) {
      frozen--;
      return Math.floor(t);
    }
    // Rates are chosen so the clock always catches up again: a big step back costs up to ~6000
    // throwing reads, and the next big step comes every ~50000 reads on average.
    const r = rand();
    if (r < 0.0003) frozen = 3000;
    else if (r < 0.0006) t -= 1 + Math.floor(rand() * 10); // small step back: waited out
    else if (r < 0.00062) t -= 11 + Math.floor(rand() * 50); // big step back: throws until it catches up
    else if (r < 0.0008) t += 1 + Math.floor(rand() * 5000); // leap forward
    else t += 0.01;
    return Math.floor(t);
  };
  const g = instagramId.generator({ shard: 77, clock });
  const N = 1_000_000;
  const ids = new BigUint64Array(N);
  let thrown = 0;
  let n = 0;
  let prev = -1n;
  while (n < N) {
    let id: bigint;
    try {
      id = g.next();
    } catch (err) {
      assert.ok(err instanceof ShardKitError && err.code === 'CLOCK_MOVED_BACKWARDS', String(err));
      thrown++;
      continue;
    }
    assert.ok(id > prev, `id ${n} (${id}) is not above the previous one (${prev})`);
    prev = id;
    ids[n++] = id;
  }
  // Strictly increasing already rules duplicates out; check directly anyway, and the fields.
  const sorted = ids.slice().sort();
  for (let i = 1; i < N; i++) assert.notEqual(sorted[i], sorted[i - 1]);
  let perMs = 0;
  let lastMs = -1;
  let maxPerMs = 0;
  for (let i = 0; i < N; i += 1) {
    const d = instagramId.decode(ids[i]!);
    if (d.shard !== 77) assert.fail(`id ${ids[i]} has shard ${d.shard}`);
    perMs = d.ms === lastMs ? perMs + 1 : 1;
    lastMs = d.ms;
    maxPerMs = Math.max(maxPerMs, perMs);
  }
  assert.equal(maxPerMs, 1024, 'the frozen stretches used whole milliseconds');
  assert.ok(thrown > 0, 'the big backward steps were reported');
  assert.ok(reads > N);
});

test('generators on different shards never collide, even on the same clock', () => {
  let t = EPOCH + 42;
  const clock = (): number => Math.floor((t += 0.001));
  const gens = [0, 1, 8191].map((shard) => instagramId.generator({ shard, clock }));
  const seen = new Set<bigint>();
  for (let i = 0; i < 20_000; i++) for (const g of gens) seen.add(g.next());
  assert.equal(seen.size, 60_000);
});
