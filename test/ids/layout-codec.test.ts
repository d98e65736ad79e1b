import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Snowflake } from '@sapphire/snowflake';
import { LayoutCodec, PINTEREST_LAYOUT, INSTAGRAM_LAYOUT, ShardKitError, parseId, formatId, idReplacer, type IdLayout } from '../../src/index.js';

function codeOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof ShardKitError, `expected ShardKitError, got ${String(err)}`);
    return err.code;
  }
  assert.fail('expected an error');
}

/** Twitter's Snowflake: 1 unused sign bit | 41-bit ms | 10-bit machine | 12-bit sequence. */
const TWITTER: IdLayout = {
  name: 'twitter',
  epoch: 1288834974657,
  fields: [
    { name: 'sign', bits: 1, reserved: true },
    { name: 'ms', bits: 41 },
    { name: 'machine', bits: 10 },
    { name: 'sequence', bits: 12 },
  ],
};

test('a custom Snowflake layout (Twitter 1|41|10|12) encodes like the shifts and decodes back', () => {
  const codec = new LayoutCodec(TWITTER);
  fc.assert(fc.property(fc.integer({ min: 0, max: 2 ** 41 - 1 }), fc.integer({ min: 0, max: 1023 }), fc.integer({ min: 0, max: 4095 }), (ms, machine, sequence) => {
    const id = codec.encode({ ms, machine, sequence });
    assert.equal(id, (BigInt(ms) << 22n) | (BigInt(machine) << 12n) | BigInt(sequence));
    assert.deepEqual(codec.decode(id), { ms, machine, sequence });
    assert.deepEqual(codec.decode(formatId(id)), { ms, machine, sequence });
  }), { numRuns: 3000 });
  // A real tweet id from 2013: 1288834974657 + (id >> 22) is its creation time.
  const tweet = codec.decode('375693213125754880');
  assert.equal(new Date(TWITTER.epoch! + tweet.ms!).toISOString().slice(0, 10), '2013-09-05');
  assert.equal(codeOf(() => codec.decode(1n << 63n)), 'INVALID_ID');
  assert.equal(codeOf(() => codec.encode({ ms: 0, machine: 1024, sequence: 0 })), 'INVALID_ARGUMENT');
  assert.equal(codeOf(() => codec.encode({ ms: 0, machine: 0 })), 'INVALID_ARGUMENT');
  assert.deepEqual(codec.field('machine'), { bits: 10, max: 1023 });
  assert.equal(codeOf(() => codec.field('nope')), 'INVALID_ARGUMENT');
});

test('a LayoutCodec for Discord/@sapphire\'s layout (42|5|5|12) agrees with @sapphire/snowflake', () => {
  const epoch = 1420070400000;
  const codec = new LayoutCodec({ name: 'discord', epoch, fields: [{ name: 'ms', bits: 42 }, { name: 'worker', bits: 5 }, { name: 'process', bits: 5 }, { name: 'increment', bits: 12 }] });
  const sapphire = new Snowflake(epoch);
  fc.assert(fc.property(fc.integer({ min: 0, max: 2 ** 41 }), fc.integer({ min: 0, max: 31 }), fc.integer({ min: 0, max: 31 }), fc.integer({ min: 0, max: 4095 }), (ms, worker, proc, increment) => {
    const id = sapphire.generate({ timestamp: BigInt(epoch + ms), workerId: BigInt(worker), processId: BigInt(proc), increment: BigInt(increment) });
    assert.deepEqual(codec.decode(id), { ms, worker, process: proc, increment });
    assert.equal(codec.encode({ ms, worker, process: proc, increment }), id);
  }), { numRuns: 2000 });
});

test('layouts are data: bad ones are INVALID_CONFIG', () => {
  const bad: unknown[] = [
    { name: 'short', fields: [{ name: 'a', bits: 63 }] },
    { name: 'long', fields: [{ name: 'a', bits: 33 }, { name: 'b', bits: 32 }] },
    { name: 'wide', fields: [{ name: 'a', bits: 54 }, { name: 'b', bits: 10 }] },
    { name: 'zero', fields: [{ name: 'a', bits: 0 }, { name: 'b', bits: 64 }] },
    { name: 'dup', fields: [{ name: 'a', bits: 32 }, { name: 'a', bits: 32 }] },
    { name: 'noname', fields: [{ name: '', bits: 32 }, { name: 'b', bits: 32 }] },
    { name: 'epoch', epoch: -1, fields: [{ name: 'a', bits: 32 }, { name: 'b', bits: 32 }] },
    { name: 'nofields' },
  ];
  for (const layout of bad) assert.equal(codeOf(() => new LayoutCodec(layout as IdLayout)), 'INVALID_CONFIG', JSON.stringify(layout));
});

test('the built-in layouts are 64 bits as SPEC §1 says', () => {
  assert.deepEqual(PINTEREST_LAYOUT.fields.map((f) => f.bits), [2, 16, 10, 36]);
  assert.deepEqual(INSTAGRAM_LAYOUT.fields.map((f) => f.bits), [41, 13, 10]);
  assert.equal(INSTAGRAM_LAYOUT.epoch, 1314220021721);
});

test('parseId / formatId: canonical unsigned decimal only, exact above 2^53', () => {
  const big = '18446744073709551615';
  assert.equal(parseId(big), (1n << 64n) - 1n);
  assert.equal(formatId(parseId(big)), big);
  assert.equal(formatId(parseId('9007199254740993')), '9007199254740993');
  assert.equal(parseId(5n), 5n);
  for (const bad of ['', '-0', '007', '1e3', '0x1f', '1 ', '١٢', '18446744073709551616', '123456789012345678901']) assert.equal(codeOf(() => parseId(bad)), 'INVALID_ID', bad);
  for (const bad of [5, null, undefined, {}, -1n, 1n << 64n]) assert.equal(codeOf(() => parseId(bad)), 'INVALID_ID', String(bad));
});

test('idReplacer writes every bigint, nested or not, as its exact decimal string; other values as JSON.stringify does', () => {
  const page = { items: [{ id: 18446744073709551615n, sequence: 3 }, { id: 241294492511762325n, sequence: -1 }], next: null, note: 'x', n: 1.5 };
  assert.throws(() => JSON.stringify(page), TypeError);
  assert.equal(JSON.stringify(page, idReplacer), '{"items":[{"id":"18446744073709551615","sequence":3},{"id":"241294492511762325","sequence":-1}],"next":null,"note":"x","n":1.5}');
  assert.equal(JSON.stringify(1n, idReplacer), '"1"');
});
