/**
 * A loader that dies while the dump is held behind it (its target master killed mid-copy, its
 * stdin never read again) must end the copy with an error, not hang it. The dump's stdout was left
 * paused by backpressure when the copy killed everything: unread, it never saw its end, the dump's
 * 'close' never came, and `shards move` waited for ever (a fresh-clone CI run of
 * mariadb-copy-crash.test.ts hung 15 minutes). Fake mariadb-dump / mariadb on PATH make the
 * backpressure certain, with no server.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { dumpCopy } from '../../src/moves/mariadb/dump-copy.js';
import { withFakeBinaries } from './fake-binaries.js';

test('a loader that dies with the dump held behind it fails the copy: it does not hang', async () => {
  // A dump that never ends on its own, and a loader that reads nothing, then dies.
  await withFakeBinaries({
    'mariadb-dump': 'echo "-- Current Database: \\`db00000\\`"\nexec yes "INSERT INTO pins VALUES (1,\'{}\',NOW());"\n',
    mariadb: 'sleep 1\necho "ERROR 2013 (HY000): Lost connection to server during query" >&2\nexit 1\n',
  }, async () => {
    const admin = { clientArgs: () => [] };
    const outcome = dumpCopy(admin as never, 'MySQL001B', ['MySQL002A', 'MySQL002B'], ['db00000']).then(() => 'resolved', (err: Error) => err.message);
    // Bounded, so the old code fails here instead of hanging the suite.
    // The bound is ref'd: with nothing else left, the old code let the process exit mid-test.
    const bound = new AbortController();
    const result = await Promise.race([outcome, sleep(60_000, 'hung', { signal: bound.signal }).catch(() => 'hung')]);
    bound.abort();
    assert.notEqual(result, 'hung', 'the copy never ended after its loader died');
    // Both loaders die at once: whichever is reported first (its exit, or the dump's EPIPE into it) names a loader.
    assert.match(result, /^copying MySQL001B to MySQL002A and MySQL002B failed: mariadb \(MySQL002[AB]\)/);
  });
});
