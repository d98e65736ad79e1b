import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { pinterestId, ShardKitError } from '../../src/index.js';

test('the seed example decodes: 241294492511762325 -> shard 3429, type 1, local id 7075733', () => {
  assert.deepEqual(pinterestId.decode('241294492511762325'), { shard: 3429, type: 1, localId: 7075733 });
  assert.deepEqual(pinterestId.decode(241294492511762325n), { shard: 3429, type: 1, localId: 7075733 });
  assert.equal(pinterestId.encode({ shard: 3429, type: 1, localId: 7075733 }), 241294492511762325n);
});

test('encode matches (shard << 46) | (type << 36) | local', () => {
  fc.assert(fc.property(fc.integer({ min: 0, max: 0xffff }), fc.integer({ min: 0, max: 1023 }), fc.integer({ min: 0, max: 2 ** 36 - 1 }), (shard, type, localId) => {
    const id = pinterestId.encode({ shard, type, localId });
    assert.equal(id, (BigInt(shard) << 46n) | (BigInt(type) << 36n) | BigInt(localId));
    assert.deepEqual(pinterestId.decode(id), { shard, type, localId });
    assert.deepEqual(pinterestId.decode(id.toString()), { shard, type, localId });
  }), { numRuns: 5000 });
});

test('extremes round-trip', () => {
  for (const parts of [{ shard: 0, type: 0, localId: 0 }, { shard: 65535, type: 1023, localId: 2 ** 36 - 1 }]) {
    assert.deepEqual(pinterestId.decode(pinterestId.encode(parts)), parts);
  }
  assert.equal(pinterestId.encode({ shard: 65535, type: 1023, localId: 2 ** 36 - 1 }), (1n << 62n) - 1n);
});

function code(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof ShardKitError, `expected ShardKitError, got ${String(err)}`);
    return err.code;
  }
  assert.fail('expected an error');
}

test('malformed ids are INVALID_ID', () => {
  for (const bad of ['', 'abc', '-1', '1.5', '1e3', ' 1', '01', '+1', '0x10', '18446744073709551616', '99999999999999999999999', String(1n << 62n), String((1n << 64n) - 1n)]) {
    assert.equal(code(() => pinterestId.decode(bad)), 'INVALID_ID', bad);
  }
  assert.equal(code(() => pinterestId.decode(-1n)), 'INVALID_ID');
  assert.equal(code(() => pinterestId.decode(1n << 64n)), 'INVALID_ID');
  assert.equal(code(() => pinterestId.decode(12 as unknown as string)), 'INVALID_ID');
});

test('out-of-range fields are INVALID_ARGUMENT', () => {
  for (const parts of [{ shard: 65536, type: 0, localId: 0 }, { shard: 0, type: 1024, localId: 0 }, { shard: 0, type: 0, localId: 2 ** 36 }, { shard: -1, type: 0, localId: 0 }, { shard: 1.5, type: 0, localId: 0 }, { shard: NaN, type: 0, localId: 0 }]) {
    assert.equal(code(() => pinterestId.encode(parts)), 'INVALID_ARGUMENT', JSON.stringify(parts));
  }
});
