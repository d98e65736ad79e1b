/**
 * `shards move --max-rate` (issue #29 item 3) in rows or bytes per second, without a server:
 * - the option's text: rows per second (`5000`, `5000rows/s`) or bytes per second (`20MB/s`,
 *   `512KiB/s`); anything else is one typed INVALID_ARGUMENT line naming the option;
 * - the bytes limit on a fake clock: the copy never runs ahead of rate x elapsed time, and with
 *   both limits set the stricter one decides.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isShardKitError } from '../../src/errors.js';
import { copyThrottle, parseCopyRate, parseSourceLag } from '../../src/moves/copy-throttle.js';
import { defaultConfig, resolveSchema, type ShardKitConfig } from '../../src/config/config.js';
import { openMoveEngine } from '../../src/ops/move-engines.js';
import { ShardMap } from '../../src/topology/shard-map.js';

test('--max-rate: rows per second or bytes per second (MB = 10^6, MiB = 2^20); bad text is a typed error naming the option', () => {
  assert.deepEqual(parseCopyRate('5000'), { rowsPerSecond: 5000 });
  assert.deepEqual(parseCopyRate('5000rows/s'), { rowsPerSecond: 5000 });
  assert.deepEqual(parseCopyRate('20MB/s'), { bytesPerSecond: 20_000_000 });
  assert.deepEqual(parseCopyRate('20 mb/s'), { bytesPerSecond: 20_000_000 });
  assert.deepEqual(parseCopyRate('512KiB/s'), { bytesPerSecond: 524_288 });
  assert.deepEqual(parseCopyRate('1.5GB/s'), { bytesPerSecond: 1_500_000_000 });
  for (const bad of ['0', 'fast', '-5', '1.5', '20MB', '20 MB/min', '0MB/s', '', '100000001']) {
    assert.throws(() => parseCopyRate(bad), (err) => isShardKitError(err, 'INVALID_ARGUMENT') && /--max-rate must be rows per second/.test(err.message), bad);
  }
});

/** A clock that only moves when the throttle sleeps (or the test says so). */
const fakeTime = () => {
  let t = 0;
  const slept: number[] = [];
  return { now: () => t, sleep: async (ms: number) => { slept.push(ms); t += ms; }, advance: (ms: number) => { t += ms; }, slept };
};

test('bytes per second: 5 MB at 1 MB/s sleep 5 s in all; with a row limit beside it the stricter decides; a slower copy never sleeps', async () => {
  const clock = fakeTime();
  const take = copyThrottle({ maxBytesRate: 1_000_000, now: clock.now, sleep: clock.sleep });
  for (let i = 0; i < 5; i++) await take(10, 1_000_000);
  assert.equal(clock.slept.reduce((a, b) => a + b, 0), 5000);

  // 1,000 rows of 10 KB each: 1,000 rows/s would allow 1 s, 1 MB/s needs 10 s.
  const both = fakeTime();
  const take2 = copyThrottle({ maxRate: 1000, maxBytesRate: 1_000_000, now: both.now, sleep: both.sleep });
  for (let i = 0; i < 10; i++) await take2(100, 1_000_000);
  assert.equal(both.now(), 10_000);

  const slow = fakeTime();
  const take3 = copyThrottle({ maxBytesRate: 1_000_000, now: slow.now, sleep: slow.sleep });
  for (let i = 0; i < 5; i++) {
    slow.advance(2000);
    await take3(0, 1_000_000);
  }
  assert.deepEqual(slow.slept, []);
});

test('--max-source-lag: transactions (MariaDB) or bytes of WAL (PostgreSQL); bad text, or the other engine\'s unit, is a typed error naming the option before any engine opens', async () => {
  assert.deepEqual(parseSourceLag('1000'), { transactions: 1000 });
  assert.deepEqual(parseSourceLag('0'), { transactions: 0 });
  assert.deepEqual(parseSourceLag('64MB'), { bytes: 64_000_000 });
  assert.deepEqual(parseSourceLag('512 KiB'), { bytes: 524_288 });
  assert.deepEqual(parseSourceLag('1.5GiB'), { bytes: 1_610_612_736 });
  for (const bad of ['soon', '-5', '1.5', '20MB/s', '', '100000001', '10 parsecs']) {
    assert.throws(() => parseSourceLag(bad), (err) => isShardKitError(err, 'INVALID_ARGUMENT') && /--max-source-lag must be transactions/.test(err.message), bad);
  }
  const base = defaultConfig({ shards: 16 });
  const map = ShardMap.fromJSON(base.shardMap);
  const mysql = { ...base, storage: { backend: 'mysql', user: 'u', poolSize: 1, connectTimeoutMs: 1000, queryTimeoutMs: 1000 } } as unknown as ShardKitConfig;
  const postgres = { ...base, storage: { backend: 'postgres', user: 'u', database: 'd', poolSize: 1, connectTimeoutMs: 1000, queryTimeoutMs: 1000 } } as unknown as ShardKitConfig;
  await assert.rejects(openMoveEngine(mysql, resolveSchema(mysql), '/nonexistent', map, { sourceLag: { bytes: 64_000_000 } }),
    (err) => isShardKitError(err, 'INVALID_ARGUMENT') && /--max-source-lag on MariaDB is transactions/.test(err.message));
  await assert.rejects(openMoveEngine(postgres, resolveSchema(postgres), '/nonexistent', map, { sourceLag: { transactions: 1000 } }),
    (err) => isShardKitError(err, 'INVALID_ARGUMENT') && /--max-source-lag on PostgreSQL is bytes of WAL/.test(err.message));
});
