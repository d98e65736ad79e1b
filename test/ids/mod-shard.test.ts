import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { modShard, ShardKitError } from '../../src/index.js';

/** SPEC §4 by the letter: md5 of the UTF-8 bytes as a big-endian 128-bit integer, mod N. */
function reference(key: string, shards: number): number {
  const hex = createHash('md5').update(Buffer.from(key, 'utf8')).digest('hex');
  return Number(BigInt(`0x${hex}`) % BigInt(shards));
}

test('modShard("1.2.3.4") is 1537; the seed\'s 1524 is md5 of "1.2.3.4\\n"', () => {
  assert.equal(modShard('1.2.3.4'), 1537);
  assert.equal(modShard('1.2.3.4', 4096), 1537);
  assert.equal(modShard('1.2.3.4\n'), 1524);
});

test('modShard agrees with a BigInt reference over random keys (ASCII, unicode, lone surrogates) and shard counts', () => {
  fc.assert(fc.property(
    fc.oneof(fc.string(), fc.string({ unit: 'grapheme' }), fc.string({ unit: 'binary' }), fc.constantFrom('', 'é', '日本語', '🙂', 'a\u0000b', '\ud800')),
    fc.oneof(fc.constant(4096), fc.integer({ min: 1, max: 2 ** 21 })),
    (key, shards) => {
      const s = modShard(key, shards);
      assert.equal(s, reference(key, shards));
      assert.ok(Number.isInteger(s) && s >= 0 && s < shards);
    },
  ), { numRuns: 5000 });
});

test('modShard with the default 4096 is stable for known keys', () => {
  for (const key of ['alice@example.com', 'bob', '10.0.0.1', 'ünïcödé', '']) assert.equal(modShard(key), reference(key, 4096), key);
});

test('bad arguments are INVALID_ARGUMENT', () => {
  const code = (fn: () => unknown): string => {
    try {
      fn();
    } catch (err) {
      assert.ok(err instanceof ShardKitError);
      return err.code;
    }
    return 'no error';
  };
  for (const shards of [0, -1, 1.5, NaN, 2 ** 21 + 1, Infinity]) assert.equal(code(() => modShard('k', shards)), 'INVALID_ARGUMENT', String(shards));
  assert.equal(code(() => modShard(42 as unknown as string)), 'INVALID_ARGUMENT');
  assert.equal(code(() => modShard(undefined as unknown as string)), 'INVALID_ARGUMENT');
});
