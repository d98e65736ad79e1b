/**
 * A parallel MariaDB copy holds FLUSH TABLES WITH READ LOCK on the source's slave until every
 * dump has opened its snapshot, and the slave's SQL thread waits meanwhile: each millisecond held
 * is source lag at thousands of writes a second (issue #29, bench/moves-lag.bench.ts). So no
 * process may be forked under the lock: when the lock is taken, the loaders and a waiting shell
 * per dump already run, and no dump has started. Fake mariadb-dump / mariadb on PATH, a fake
 * lock connection that looks at this process's children when the lock is asked for; no server.
 * On the old code nothing was spawned before the lock (12 forks under it, ~40 ms measured).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { parallelDumpCopy } from '../../src/moves/mariadb/parallel-dump-copy.js';
import { withFakeBinaries } from './fake-binaries.js';

/** This process's children, as `ps` prints their command lines. */
const children = () => execFileSync('ps', ['-o', 'args=', '--ppid', String(process.pid)], { encoding: 'utf8' }).split('\n').filter((l) => l.trim() !== '' && !l.startsWith('ps '));

test('a parallel copy spawns its loaders and dump processes before it takes the lock, and starts the dumps only under it', async () => {
  await withFakeBinaries({
    'mariadb-dump': 'echo "-- Setting savepoint..." >&2\necho "-- Current Database: \\`db00000\\`"\necho "-- SET GLOBAL gtid_slave_pos=\'0-1-42\';"\n',
    mariadb: 'cat > /dev/null\n',
  }, async (bin) => {
    const queries: string[] = [];
    let atLock: string[] | undefined;
    const lock = {
      query: async (sql: string) => {
        queries.push(sql);
        if (sql === 'FLUSH TABLES WITH READ LOCK') atLock = children();
        return [[], []];
      },
      end: async () => undefined,
      destroy: () => undefined,
    };
    const admin = { clientArgs: () => [], connect: async () => lock };
    const position = await parallelDumpCopy(admin as never, 'MySQL001B', ['MySQL002A', 'MySQL002B'], ['db00000', 'db00001', 'db00002', 'db00003'], 4);
    assert.equal(position, '0-1-42');
    assert.deepEqual(queries, ['SET SESSION lock_wait_timeout = 10', 'FLUSH TABLES WITH READ LOCK', 'UNLOCK TABLES']);
    assert.ok(atLock !== undefined);
    // 4 streams x 2 targets loaders, and 4 shells waiting for their go; no dump yet.
    assert.equal(atLock.filter((c) => c.startsWith(`/bin/sh ${bin}/mariadb `)).length, 8, `children at the lock: ${atLock.join(' | ')}`);
    assert.equal(atLock.filter((c) => c.includes('read -r _ && exec mariadb-dump')).length, 4, `children at the lock: ${atLock.join(' | ')}`);
    assert.equal(atLock.filter((c) => c.includes(`${bin}/mariadb-dump`)).length, 0, `a dump started before the lock: ${atLock.join(' | ')}`);
  });
});
