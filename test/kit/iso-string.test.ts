import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { isoString } from '../../src/kit/kit-object.js';

test('isoString matches Date#toISOString from year 0 to 9999', () => {
  for (const ms of [0, -1, 1, 951782400000, 951868800000, 1795386485460, -62167219200000, 253402300799999, 4107542399999]) {
    assert.equal(isoString(ms), new Date(ms).toISOString(), String(ms));
  }
  fc.assert(fc.property(fc.integer({ min: -62167219200000, max: 253402300799999 }), (ms) => isoString(ms) === new Date(ms).toISOString()), { numRuns: 20000 });
});
