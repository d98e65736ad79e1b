import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isShardKitError } from '../../src/errors.js';
import { HostPools } from '../../src/storage/sql/host-pools.js';

const pool = (address: string) => ({ address, queries: 0, inFlight: 0, maxInFlight: 0, close: async () => {} });

test('a host the map names but this process was not told about is HOST_UNKNOWN (503, retryable), and learn() adds it without changing known hosts', () => {
  const pools = new HostPools<ReturnType<typeof pool>, { host: string }>({ A: { host: 'a' } }, (_name, a) => pool(a.host));
  assert.throws(() => pools.get('B'), (err) => isShardKitError(err, 'HOST_UNKNOWN') && err.status === 503 && err.details?.host === 'B');
  assert.equal(pools.get('A').address, 'a');
  assert.deepEqual(pools.learn({ A: { host: 'elsewhere' }, B: { host: 'b' } }), ['B']);
  assert.equal(pools.get('A').address, 'a', 'a known host keeps its address (its pool may be in use)');
  assert.equal(pools.get('B').address, 'b');
  assert.equal(pools.has('B'), true);
  // Names that are Object.prototype keys are not hosts.
  assert.throws(() => pools.get('constructor'), (err) => isShardKitError(err, 'HOST_UNKNOWN'));
});
