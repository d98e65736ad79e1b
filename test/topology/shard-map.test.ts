import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { ShardMap, ShardKitError, defaultShardMapJson, shardDatabaseName, type ShardMapJson, type ShardRange } from '../../src/index.js';

function errorOf(fn: () => unknown): ShardKitError {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof ShardKitError, `expected ShardKitError, got ${String(err)}`);
    return err;
  }
  assert.fail('expected an error');
}

const mod = { count: 4, ranges: [{ range: [0, 3] as [number, number], master: 'm1', slave: 'm2' }] };
const mapWith = (ranges: ShardRange[], modShards = mod): unknown => ({ version: 1, ranges, modShards });

test('default map: 4096 open shards over MySQL001A/B..MySQL008A/B, 4096 mod shards over msdb001a/b..msdb008a/b', () => {
  const json = defaultShardMapJson();
  const map = ShardMap.fromJSON(json);
  assert.equal(map.version, 1);
  assert.equal(map.shardCount, 4096);
  assert.equal(map.openShardCount, 4096);
  assert.equal(json.ranges.length, 8);
  json.ranges.forEach((r, i) => {
    const n = String(i + 1).padStart(3, '0');
    assert.deepEqual(r, { range: [i * 512, i * 512 + 511], master: `MySQL${n}A`, slave: `MySQL${n}B`, open: true });
  });
  assert.deepEqual(json.ranges[0], { range: [0, 511], master: 'MySQL001A', slave: 'MySQL001B', open: true });
  assert.equal(json.modShards.count, 4096);
  assert.equal(map.modShardCount, 4096);
  json.modShards.ranges.forEach((r, i) => {
    const n = String(i + 1).padStart(3, '0');
    assert.deepEqual(r, { range: [i * 512, i * 512 + 511], master: `msdb${n}a`, slave: `msdb${n}b` });
  });
  assert.deepEqual(map.locate(3429), { master: 'MySQL007A', slave: 'MySQL007B', open: true });
  assert.deepEqual(map.locateModShard(1537), { master: 'msdb004a', slave: 'msdb004b', open: true });
  assert.equal(map.hostNames().length, 32);
  assert.deepEqual(map.toJSON(), json);
  assert.equal(shardDatabaseName(3429), 'db03429');
  assert.equal(shardDatabaseName(0), 'db00000');
});

test('validation: overlapping ranges are INVALID_CONFIG', () => {
  const err = errorOf(() => ShardMap.fromJSON(mapWith([{ range: [0, 10], master: 'a' }, { range: [10, 20], master: 'b' }])));
  assert.equal(err.code, 'INVALID_CONFIG');
  assert.match(err.message, /overlaps/);
  assert.equal(errorOf(() => ShardMap.fromJSON(mapWith([{ range: [0, 20], master: 'a' }, { range: [5, 6], master: 'b' }]))).code, 'INVALID_CONFIG');
});

test('validation: gaps (and not starting at 0) are INVALID_CONFIG', () => {
  const gap = errorOf(() => ShardMap.fromJSON(mapWith([{ range: [0, 9], master: 'a' }, { range: [11, 20], master: 'b' }])));
  assert.equal(gap.code, 'INVALID_CONFIG');
  assert.match(gap.message, /10\.\.10 are not covered/);
  assert.equal(errorOf(() => ShardMap.fromJSON(mapWith([{ range: [1, 9], master: 'a' }]))).code, 'INVALID_CONFIG');
  // The mod-shard fleet must cover exactly 0..count-1.
  assert.equal(errorOf(() => ShardMap.fromJSON(mapWith([{ range: [0, 9], master: 'a' }], { count: 5, ranges: [{ range: [0, 3], master: 'm' }] }))).code, 'INVALID_CONFIG');
  assert.equal(errorOf(() => ShardMap.fromJSON(mapWith([{ range: [0, 9], master: 'a' }], { count: 3, ranges: [{ range: [0, 3], master: 'm' }] }))).code, 'INVALID_CONFIG');
});

test('validation: reversed ranges, shards past 65535, bad names and shapes are INVALID_CONFIG', () => {
  assert.match(errorOf(() => ShardMap.fromJSON(mapWith([{ range: [0, 9], master: 'a' }, { range: [20, 10], master: 'b' }]))).message, /reversed/);
  assert.match(errorOf(() => ShardMap.fromJSON(mapWith([{ range: [0, 65536], master: 'a' }]))).message, /65535/);
  ShardMap.fromJSON(mapWith([{ range: [0, 65535], master: 'a' }]));
  const bad: unknown[] = [
    null,
    {},
    mapWith([]),
    mapWith([{ range: [0, 1.5], master: 'a' } as unknown as ShardRange]),
    mapWith([{ range: [-1, 3], master: 'a' }]),
    mapWith([{ range: [0, 3], master: '' }]),
    mapWith([{ range: [0, 3], master: 'a b' }]),
    mapWith([{ range: [0, 3], master: 'a', slave: 'a' }]),
    mapWith([{ range: [0, 3], master: 'a', extra: 1 } as unknown as ShardRange]),
    mapWith([{ range: [0, 3], master: 'a' }], { count: 4, ranges: [{ range: [0, 3], master: 'm', open: true } as ShardRange] } as typeof mod),
    { ...(mapWith([{ range: [0, 3], master: 'a' }]) as object), version: -1 },
  ];
  for (const input of bad) assert.equal(errorOf(() => ShardMap.fromJSON(input)).code, 'INVALID_CONFIG', JSON.stringify(input));
});

test('validation: every host must be declared when hosts are given', () => {
  const json = mapWith([{ range: [0, 3], master: 'a', slave: 'b' }]);
  ShardMap.fromJSON(json, { hosts: ['a', 'b', 'm1', 'm2'] });
  const err = errorOf(() => ShardMap.fromJSON(json, { hosts: ['a', 'm1', 'm2'] }));
  assert.equal(err.code, 'INVALID_CONFIG');
  assert.match(err.message, /host b/);
  assert.match(errorOf(() => ShardMap.fromJSON(json, { hosts: ['a', 'b', 'm1'] })).message, /host m2/);
});

test('ranges may be listed in any order; locate is the same', () => {
  const a = ShardMap.fromJSON(mapWith([{ range: [5, 9], master: 'b' }, { range: [0, 4], master: 'a' }]));
  assert.equal(a.locate(4).master, 'a');
  assert.equal(a.locate(5).master, 'b');
  assert.deepEqual(a.toJSON().ranges.map((r) => r.range[0]), [0, 5]);
});

/** Random valid maps: contiguous ranges of random sizes, random open flags. */
const randomMap = fc.array(fc.record({ size: fc.integer({ min: 1, max: 300 }), open: fc.boolean(), slave: fc.boolean() }), { minLength: 1, maxLength: 60 }).map((parts) => {
  let start = 0;
  const ranges: ShardRange[] = parts.map((p, i) => {
    const r: ShardRange = { range: [start, start + p.size - 1], master: `h${i}`, open: p.open };
    if (p.slave) r.slave = `s${i}`;
    start += p.size;
    return r;
  });
  return { version: 3, ranges, modShards: { count: 16, ranges: [{ range: [0, 15], master: 'mod' }] } } as ShardMapJson;
});

test('locate (binary search) agrees with a brute-force scan for every shard, and rejects the rest', () => {
  fc.assert(fc.property(randomMap, (json) => {
    const map = ShardMap.fromJSON(json);
    const last = json.ranges.at(-1)!.range[1];
    for (let shard = 0; shard <= last; shard++) {
      const r = json.ranges.find((x) => x.range[0] <= shard && shard <= x.range[1])!;
      const loc = map.locate(shard);
      assert.equal(loc.master, r.master);
      assert.equal(loc.slave, r.slave);
      assert.equal(loc.open, r.open === true);
    }
    for (const bad of [-1, last + 1, 0.5, NaN, 70000]) assert.equal(errorOf(() => map.locate(bad)).code, 'UNKNOWN_SHARD');
  }), { numRuns: 200 });
});

test('pickOpenShard is a uniform bijection from [0,1) onto the open shards and never picks a closed one', () => {
  fc.assert(fc.property(randomMap, (json) => {
    const map = ShardMap.fromJSON(json);
    const open: number[] = [];
    for (const r of json.ranges) if (r.open) for (let s = r.range[0]; s <= r.range[1]; s++) open.push(s);
    assert.equal(map.openShardCount, open.length);
    if (open.length === 0) {
      assert.equal(errorOf(() => map.pickOpenShard(0.5)).code, 'SHARD_CLOSED');
      return;
    }
    // Equal slices of [0, 1) map to distinct open shards, in order: each open shard gets exactly 1/n.
    const picked = open.map((_, k) => map.pickOpenShard((k + 0.5) / open.length));
    assert.deepEqual(picked, open);
    assert.equal(map.pickOpenShard(0), open[0]);
    assert.equal(map.pickOpenShard(0.9999999999999999), open.at(-1));
  }), { numRuns: 200 });
});

test('pickOpenShard with Math.random covers the open ranges and only them', () => {
  const map = ShardMap.fromJSON(mapWith([{ range: [0, 3], master: 'a', open: false }, { range: [4, 5], master: 'b', open: true }, { range: [6, 9], master: 'c' }, { range: [10, 11], master: 'd', open: true }]));
  const counts = new Map<number, number>();
  for (let i = 0; i < 4000; i++) {
    const s = map.pickOpenShard();
    counts.set(s, (counts.get(s) ?? 0) + 1);
  }
  assert.deepEqual([...counts.keys()].sort((a, b) => a - b), [4, 5, 10, 11]);
});

test('shardsOnHost, modShardsOnHost, withVersion', () => {
  const map = ShardMap.fromJSON(defaultShardMapJson({ shards: 16, pairs: 2, modShards: 8, modPairs: 2 }));
  assert.deepEqual(map.shardsOnHost('MySQL002A'), [8, 9, 10, 11, 12, 13, 14, 15]);
  assert.deepEqual(map.shardsOnHost('MySQL002B'), []);
  assert.deepEqual(map.modShardsOnHost('msdb001a'), [0, 1, 2, 3]);
  const v9 = map.withVersion(9);
  assert.equal(v9.version, 9);
  assert.equal(map.version, 1);
  assert.deepEqual({ ...v9.toJSON(), version: 1 }, map.toJSON());
  assert.equal(errorOf(() => defaultShardMapJson({ shards: 10, pairs: 3 })).code, 'INVALID_CONFIG');
});
