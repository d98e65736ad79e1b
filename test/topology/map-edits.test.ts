import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { ShardMap, ShardKitError, defaultShardMapJson, type ShardMapJson, type ShardRange } from '../../src/index.js';
import {
  diffShardMaps, formatShardMapDiff, mergeAdjacent, moveShards, parseShardSpan, promoteSlave, setOpen,
} from '../../src/topology/map-edits.js';

function errorOf(fn: () => unknown): ShardKitError {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof ShardKitError, `expected ShardKitError, got ${String(err)}`);
    return err;
  }
  assert.fail('expected an error');
}

const small: ShardMapJson = {
  version: 3,
  ranges: [
    { range: [0, 7], master: 'a1', slave: 'a2', open: true },
    { range: [8, 15], master: 'b1', slave: 'b2', open: false },
  ],
  modShards: { count: 8, ranges: [{ range: [0, 3], master: 'a1', slave: 'm2' }, { range: [4, 7], master: 'm3' }] },
};
const map = (json: ShardMapJson = small) => ShardMap.fromJSON(json);
/** The result must itself be a valid map. */
const valid = (json: ShardMapJson) => ShardMap.fromJSON(json).toJSON();

test('parseShardSpan: first..last or one shard; reversed, past 65535 and junk are INVALID_ARGUMENT', () => {
  assert.deepEqual(parseShardSpan('4..7'), { first: 4, last: 7 });
  assert.deepEqual(parseShardSpan('65535'), { first: 65535, last: 65535 });
  for (const [text, pattern] of [['7..4', /reversed/], ['0..65536', /past 65535/], ['a..b', /first\.\.last/], ['-1..3', /first\.\.last/], ['1...3', /first\.\.last/], ['', /first\.\.last/]] as const) {
    const err = errorOf(() => parseShardSpan(text));
    assert.equal(err.code, 'INVALID_ARGUMENT', text);
    assert.match(err.message, pattern, text);
  }
});

test('promote: object and mod ranges mastered by the host get their slave as master, the host becomes slave', () => {
  const next = valid(promoteSlave(map(), 'a1'));
  assert.deepEqual(next.ranges[0], { range: [0, 7], master: 'a2', slave: 'a1', open: true });
  assert.deepEqual(next.ranges[1], small.ranges[1]);
  assert.deepEqual(next.modShards.ranges[0], { range: [0, 3], master: 'm2', slave: 'a1' });
  const dropped = valid(promoteSlave(map(), 'a1', { dropOldMaster: true }));
  assert.deepEqual(dropped.ranges[0], { range: [0, 7], master: 'a2', open: true });
  assert.deepEqual(dropped.modShards.ranges[0], { range: [0, 3], master: 'm2' });
});

test('promote refuses a host that masters nothing, or a range without a slave, naming it', () => {
  const none = errorOf(() => promoteSlave(map(), 'a2'));
  assert.equal(none.code, 'INVALID_ARGUMENT');
  assert.match(none.message, /a2 is master of no range/);
  const lonely = errorOf(() => promoteSlave(map(), 'm3'));
  assert.match(lonely.message, /no slave to promote for mod shards 4\.\.7/);
});

test('promote merges neighbours that end up on the same pair', () => {
  const json: ShardMapJson = {
    ...small,
    ranges: [{ range: [0, 3], master: 'x', slave: 'y', open: true }, { range: [4, 7], master: 'y', slave: 'x', open: true }, { range: [8, 15], master: 'b1', open: true }],
  };
  assert.deepEqual(valid(promoteSlave(map(json), 'x')).ranges, [{ range: [0, 7], master: 'y', slave: 'x', open: true }, { range: [8, 15], master: 'b1', open: true }]);
});

test('split: a span inside one range moves to the new pair, the range splits into three', () => {
  const next = valid(moveShards(map(), { first: 2, last: 5 }, { master: 'c1', slave: 'c2' }));
  assert.deepEqual(next.ranges, [
    { range: [0, 1], master: 'a1', slave: 'a2', open: true },
    { range: [2, 5], master: 'c1', slave: 'c2', open: true },
    { range: [6, 7], master: 'a1', slave: 'a2', open: true },
    small.ranges[1],
  ]);
  // Upper half: two ranges; the open flag is kept.
  assert.deepEqual(valid(moveShards(map(), { first: 12, last: 15 }, { master: 'c1' })).ranges.slice(1), [
    { range: [8, 11], master: 'b1', slave: 'b2', open: false },
    { range: [12, 15], master: 'c1', open: false },
  ]);
  const mod = valid(moveShards(map(), { first: 0, last: 1 }, { master: 'c1', slave: 'c2' }, { fleet: 'mod' }));
  assert.deepEqual(mod.ranges, small.ranges);
  assert.deepEqual(mod.modShards.ranges[0], { range: [0, 1], master: 'c1', slave: 'c2' });
});

test('split refuses spans over two ranges, past the end, and the same host as master and slave', () => {
  const cases: Array<[() => unknown, RegExp]> = [
    [() => moveShards(map(), { first: 6, last: 9 }, { master: 'c1' }), /6\.\.9 span two ranges/],
    [() => moveShards(map(), { first: 14, last: 16 }, { master: 'c1' }), /past the last shard of the map, 15.*topology open/],
    [() => moveShards(map(), { first: 6, last: 8 }, { master: 'c1' }, { fleet: 'mod' }), /mod shards 6\.\.8 go past the last mod shard/],
    [() => moveShards(map(), { first: 0, last: 1 }, { master: 'c1', slave: 'c1' }), /must be different hosts/],
  ];
  for (const [fn, pattern] of cases) {
    const err = errorOf(fn);
    assert.equal(err.code, 'INVALID_ARGUMENT');
    assert.match(err.message, pattern);
  }
});

test('open/close: split ranges as needed, spanning several ranges is fine, equal neighbours merge', () => {
  const closed = valid(setOpen(map(), { first: 4, last: 11 }, false));
  assert.deepEqual(closed.ranges, [
    { range: [0, 3], master: 'a1', slave: 'a2', open: true },
    { range: [4, 7], master: 'a1', slave: 'a2', open: false },
    { range: [8, 15], master: 'b1', slave: 'b2', open: false },
  ]);
  assert.deepEqual(valid(setOpen(map(closed), { first: 4, last: 7 }, true)).ranges, small.ranges);
});

test('open past the last shard adds shards on --master/--slave; a gap or a missing pair is refused', () => {
  const grown = valid(setOpen(map(), { first: 12, last: 31 }, true, { master: 'c1', slave: 'c2' }));
  assert.deepEqual(grown.ranges, [
    small.ranges[0],
    { range: [8, 11], master: 'b1', slave: 'b2', open: false },
    { range: [12, 15], master: 'b1', slave: 'b2', open: true },
    { range: [16, 31], master: 'c1', slave: 'c2', open: true },
  ]);
  assert.equal(ShardMap.fromJSON(grown).shardCount, 32);
  const closedNew = valid(setOpen(map(), { first: 16, last: 16 }, false, { master: 'c1' }));
  assert.deepEqual(closedNew.ranges[2], { range: [16, 16], master: 'c1', open: false });
  const cases: Array<[() => unknown, RegExp]> = [
    [() => setOpen(map(), { first: 16, last: 31 }, true), /past the last shard of the map, 15: adding shards needs --master/],
    [() => setOpen(map(), { first: 20, last: 31 }, true, { master: 'c1' }), /16\.\.19 would be left uncovered/],
    [() => setOpen(map(), { first: 0, last: 3 }, true, { master: 'c1' }), /only name the hosts of new shards/],
  ];
  for (const [fn, pattern] of cases) assert.match(errorOf(fn).message, pattern);
});

test('diff: only the changed spans, object shards then mod shards, readable', () => {
  const before = defaultShardMapJson({ shards: 16, pairs: 2, modShards: 8, modPairs: 2 });
  const after = promoteSlave(ShardMap.fromJSON(before), 'MySQL002A');
  const grown = setOpen(ShardMap.fromJSON(after), { first: 16, last: 23 }, true, { master: 'n1', slave: 'n2' });
  const changes = diffShardMaps(before, grown);
  assert.deepEqual(changes.map((c) => [c.fleet, c.range]), [['objects', [8, 15]], ['objects', [16, 23]]]);
  assert.equal(formatShardMapDiff(changes), [
    'object shards 8..15: MySQL002A/MySQL002B open -> MySQL002B/MySQL002A open',
    'object shards 16..23: (none) -> n1/n2 open',
  ].join('\n'));
  assert.equal(formatShardMapDiff(diffShardMaps(before, before)), 'no change');
  const mod = moveShards(ShardMap.fromJSON(before), { first: 1, last: 1 }, { master: 'z' }, { fleet: 'mod' });
  assert.equal(formatShardMapDiff(diffShardMaps(before, mod)), 'mod shards 1: msdb001a/msdb001b -> z/-');
});

test('mergeAdjacent leaves a map with no equal neighbours', () => {
  const ranges: ShardRange[] = [
    { range: [0, 1], master: 'a', open: true }, { range: [2, 3], master: 'a', open: true }, { range: [4, 4], master: 'a', open: false }, { range: [5, 9], master: 'a', slave: 'b', open: false },
  ];
  assert.deepEqual(mergeAdjacent(ranges), [{ range: [0, 3], master: 'a', open: true }, { range: [4, 4], master: 'a', open: false }, { range: [5, 9], master: 'a', slave: 'b', open: false }]);
});

// Properties: random maps and edits. Every shard is located exactly once before and after (the
// result is a valid map covering the same shards, or more for open past the end), only the shards
// of the span change, and no two neighbours could have been merged.
const hosts = ['h1', 'h2', 'h3', 'h4'];
const randomMap = fc
  .array(fc.record({ size: fc.integer({ min: 1, max: 6 }), pair: fc.integer({ min: 0, max: 11 }), open: fc.boolean() }), { minLength: 1, maxLength: 8 })
  .map((parts): ShardMapJson => {
    let next = 0;
    const ranges = parts.map((p) => {
      const master = hosts[p.pair % 4]!;
      const slave = p.pair >= 4 ? hosts[(p.pair + Math.floor(p.pair / 4)) % 4] : undefined;
      const r: ShardRange = { range: [next, next + p.size - 1], master, ...(slave !== undefined && slave !== master ? { slave } : {}), open: p.open };
      next += p.size;
      return r;
    });
    return { version: 1, ranges, modShards: { count: 4, ranges: [{ range: [0, 3], master: 'h1', slave: 'h2' }] } };
  });

function checkResult(before: ShardMapJson, after: ShardMapJson, inSpan: (shard: number) => boolean, expect: (shard: number, was: ReturnType<ShardMap['locate']> | undefined) => object): void {
  const b = ShardMap.fromJSON(before);
  const a = ShardMap.fromJSON(after);
  assert.ok(a.shardCount >= b.shardCount);
  for (let s = 0; s < a.shardCount; s++) {
    const was = s < b.shardCount ? b.locate(s) : undefined;
    const now = a.locate(s);
    if (inSpan(s)) assert.deepEqual(now, expect(s, was), `shard ${s}`);
    else assert.deepEqual(now, was, `shard ${s} outside the span changed`);
  }
  const rs = a.objectRanges();
  for (let i = 1; i < rs.length; i++) {
    const p = rs[i - 1]!;
    const r = rs[i]!;
    assert.ok(!(p.master === r.master && p.slave === r.slave && p.open === r.open), `ranges ${i - 1} and ${i} should have merged`);
  }
}

test('property: split moves exactly the span to the new pair; everything else stays', () => {
  fc.assert(fc.property(randomMap, fc.nat(), fc.nat(), (json, x, y) => {
    const m = ShardMap.fromJSON(json);
    const r = m.objectRanges()[x % m.objectRanges().length]!;
    const size = r.range[1] - r.range[0] + 1;
    const first = r.range[0] + (y % size);
    const last = first + (x % (r.range[1] - first + 1));
    const next = moveShards(m, { first, last }, { master: 'new1', slave: 'new2' });
    checkResult(json, next, (s) => s >= first && s <= last, (s, was) => ({ master: 'new1', slave: 'new2', open: was!.open }));
  }));
});

test('property: open/close changes only the flag of the span (and adds shards past the end)', () => {
  fc.assert(fc.property(randomMap, fc.nat(40), fc.nat(10), fc.boolean(), (json, x, len, open) => {
    const m = ShardMap.fromJSON(json);
    const first = x % (m.shardCount + 1);
    const last = first + len;
    const pair = last >= m.shardCount ? { master: 'new1' } : undefined;
    const next = setOpen(m, { first, last }, open, pair);
    checkResult(json, next, (s) => s >= first && s <= last, (_s, was) => (was ? { master: was.master, ...(was.slave ? { slave: was.slave } : {}), open } : { master: 'new1', open }));
    assert.equal(ShardMap.fromJSON(next).shardCount, Math.max(m.shardCount, last + 1));
  }));
});

test('property: promote swaps exactly the ranges the host masters', () => {
  fc.assert(fc.property(randomMap, fc.constantFrom(...hosts), (json, host) => {
    const m = ShardMap.fromJSON(json);
    const mastered = [...m.objectRanges(), ...m.modShardRanges()].filter((r) => r.master === host);
    if (mastered.length === 0 || mastered.some((r) => r.slave === undefined)) {
      assert.throws(() => promoteSlave(m, host), /INVALID_ARGUMENT|master of no range|no slave/);
      return;
    }
    const next = promoteSlave(m, host);
    checkResult(json, next, (s) => m.locate(s).master === host, (_s, was) => ({ master: was!.slave, slave: host, open: was!.open }));
    const mod = ShardMap.fromJSON(next).locateModShard(0);
    assert.deepEqual(mod, host === 'h1' ? { master: 'h2', slave: 'h1', open: true } : m.locateModShard(0));
  }));
});
