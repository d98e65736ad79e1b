/**
 * The MariaDB pre-copy's throttle and progress (issue #29 items 3 and 5), on a fake clock and a
 * fake lag (no server): what they decide, never how long anything took.
 * - `--max-rate`: the copy never runs ahead of rate x elapsed time; it sleeps exactly the excess;
 * - the lag gate: while the source's slave is past the bound, the copy waits and reads the lag
 *   again; it goes on only once the lag is back within half the bound (its headroom);
 * - the rows of a dump piece are read off its INSERT statements; progress carries rate and ETA,
 *   and the table being dumped with its rows and bytes (read off the dump's markers).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyThrottle, dumpProgress, type CopyWait } from '../../src/moves/mariadb/copy-throttle.js';
import { dumpRows } from '../../src/moves/mariadb/dump-copy.js';
import { DumpTableProgress } from '../../src/moves/mariadb/dump-table-progress.js';
import type { TableProgress } from '../../src/moves/move-engine.js';

/** A clock that only moves when the throttle sleeps (or the test says so). */
const fakeTime = () => {
  let t = 0;
  const slept: number[] = [];
  return { now: () => t, sleep: async (ms: number) => { slept.push(ms); t += ms; }, advance: (ms: number) => { t += ms; }, slept };
};

test('--max-rate: 5,000 rows at 1,000 rows/s sleep 5 s in all, spread over the pieces; a copy already slower than the rate never sleeps', async () => {
  const clock = fakeTime();
  const waits: CopyWait[] = [];
  const take = copyThrottle({ maxRate: 1000, now: clock.now, sleep: clock.sleep, onWait: (w) => waits.push(w) });
  for (let i = 0; i < 5; i++) await take(1000);
  assert.equal(clock.slept.reduce((a, b) => a + b, 0), 5000);
  assert.equal(waits.length, 5);
  assert.ok(waits.every((w) => w.why === 'rate'));

  const slow = fakeTime();
  const take2 = copyThrottle({ maxRate: 1000, now: slow.now, sleep: slow.sleep });
  for (let i = 0; i < 5; i++) {
    slow.advance(2000);
    await take2(1000);
  }
  assert.deepEqual(slow.slept, []);
});

test('lag gate: the copy holds while the source\'s slave is past half the bound, reads it again, and goes on only within it', async () => {
  const clock = fakeTime();
  const lags = [0, 7, 12, 4, 3, 0];
  const seen: number[] = [];
  const waits: CopyWait[] = [];
  const take = copyThrottle({ lag: async () => { const l = lags.shift()!; seen.push(l); return l; }, maxLag: 6, lagEveryMs: 250, now: clock.now, sleep: clock.sleep, onWait: (w) => waits.push(w) });
  await take(10); // lag 0: through
  await take(10); // read less than 250 ms ago: not read again
  assert.deepEqual(seen, [0]);
  clock.advance(250);
  await take(10); // 7, 12: past the bound, waits; 4: within it but past half of it, waits; 3: through
  assert.deepEqual(seen, [0, 7, 12, 4, 3]);
  assert.deepEqual(waits, [{ why: 'lag', lag: 7, bound: 6 }, { why: 'lag', lag: 12, bound: 6 }, { why: 'lag', lag: 4, bound: 6 }]);
  // Every piece that went through did so after a lag reading within half the bound (the headroom
  // for the lag's growth between readings, which keeps it within the bound).
  assert.ok(seen.at(-1)! <= 3);
});

test('lag gate: a gate held for one stream holds every stream of the copy until the lag is back within the bound', async () => {
  const clock = fakeTime();
  const lags = [9, 9, 1];
  const seen: number[] = [];
  const take = copyThrottle({ lag: async () => { const l = lags.shift()!; seen.push(l); return l; }, maxLag: 3, lagEveryMs: 250, now: clock.now, sleep: clock.sleep });
  // Four streams hand their pieces in at once, the first finding the slave past the bound.
  const through: number[] = [];
  await Promise.all([0, 1, 2, 3].map(async () => {
    await take(10);
    through.push(seen.at(-1)!);
  }));
  // None went on before the reading within the bound; the lag was read once per wait, not per stream.
  assert.deepEqual(seen, [9, 9, 1]);
  assert.deepEqual(through, [1, 1, 1, 1]);
});

test('a lag probe that fails stops the copy (the error reaches the dump, which reports it)', async () => {
  const take = copyThrottle({ lag: async () => { throw new Error('slave unreachable'); }, maxLag: 3 });
  await assert.rejects(take(1), /slave unreachable/);
});

test('rows of a dump: one per tuple of its INSERT statements; progress gives rate and ETA against the estimate', () => {
  assert.equal(dumpRows("INSERT INTO `pins` VALUES (1,'a','t'),(2,'b','t'),(3,'c','t');\nINSERT INTO `pins` VALUES (4,'d','t');\n"), 4);
  assert.equal(dumpRows("INSERT INTO `pins` VALUES\n(1,'a','t'),\n(2,'b','t'),\n(3,'c','t');\n"), 3);
  assert.equal(dumpRows('CREATE TABLE `pins` (\n  `local_id` bigint\n);\n'), 0);
  let t = 0;
  const told: Array<Record<string, number | undefined>> = [];
  const progress = dumpProgress(1000, (p) => told.push({ ...p }), () => t);
  t = 2000;
  progress(4096, 200);
  assert.deepEqual(told.at(-1), { bytesCopied: 4096, rowsCopied: 200, rowsTotal: 1000, rowsPerSecond: 100, bytesPerSecond: 2048, etaSeconds: 8 });
  // The statistics' estimate was low: the total is never below what is copied.
  t = 4000;
  progress(9000, 1200);
  assert.deepEqual(told.at(-1), { bytesCopied: 9000, rowsCopied: 1200, rowsTotal: 1200, rowsPerSecond: 300, bytesPerSecond: 2250, etaSeconds: 0 });
});

test('per-table progress is read off the dump\'s markers: the same rows and bytes per table wherever the stream is cut', () => {
  const dump = [
    '-- MariaDB dump 10.19\n--\n-- Current Database: `shard_0007`\n--\n\nCREATE DATABASE `shard_0007`;\n',
    'CREATE TABLE `boards` (\n  `local_id` bigint\n);\n--\n-- Dumping data for table `boards`\n--\n\n',
    "INSERT INTO `boards` VALUES (1,'a'),(2,'b');\n",
    '--\n-- Dumping data for table `pins`\n--\n\n',
    "INSERT INTO `pins` VALUES\n(1,'x'),\n(2,'y'),\n(3,'z');\n",
    '--\n-- Current Database: `shard_0008`\n--\n\n',
    '--\n-- Dumping data for table `we``ird`\n--\n\n',
    "INSERT INTO `we``ird` VALUES (9,'q');\n",
  ].join('');
  const pinsData = "--\n\nINSERT INTO `pins` VALUES\n(1,'x'),\n(2,'y'),\n(3,'z');\n--\n-- Current Database: `shard_0008`\n--\n\n";
  // Whole, then cut at every position into two pieces and into one-character ones: the markers
  // split across pieces are found once, and every byte after a table's marker counts for that table.
  const read = (pieces: string[]) => {
    const p = new DumpTableProgress();
    const seen: Array<TableProgress | undefined> = [];
    let rows = 0;
    for (const x of pieces) {
      rows += p.feed(x);
      seen.push(p.table);
    }
    return { rows, last: p.table, names: [...new Set(seen.filter((t) => t !== undefined).map((t) => t.table))] };
  };
  const whole = read([dump]);
  // Its bytes: what follows its marker (the comment's closing line, then its data).
  assert.deepEqual(whole.last, { table: 'shard_0008.we`ird', rowsCopied: 1, bytesCopied: "--\n\nINSERT INTO `we``ird` VALUES (9,'q');\n".length });
  assert.equal(whole.rows, 6);
  // Rows, tables and bytes are exact wherever the stream is cut.
  const bytesOf = (t: TableProgress | undefined) => (t === undefined ? undefined : { table: t.table, bytesCopied: t.bytesCopied });
  const byChar = read([...dump]);
  assert.deepEqual(bytesOf(byChar.last), bytesOf(whole.last));
  assert.equal(byChar.rows, 6);
  assert.deepEqual(byChar.names, ['shard_0007.boards', 'shard_0007.pins', 'shard_0008.we`ird']);
  for (let cut = 0; cut <= dump.length; cut++) {
    const two = read([dump.slice(0, cut), dump.slice(cut)]);
    assert.deepEqual(bytesOf(two.last), bytesOf(whole.last), `cut at ${cut}`);
    assert.equal(two.rows, 6, `cut at ${cut}`);
  }
  // The pins table's own numbers, at the moment the next database starts.
  const upTo = dump.indexOf('-- Dumping data for table `we');
  const p = new DumpTableProgress();
  p.feed(dump.slice(0, dump.indexOf('--\n-- Current Database: `shard_0008`')));
  assert.deepEqual(p.table, { table: 'shard_0007.pins', rowsCopied: 3, bytesCopied: pinsData.indexOf('--\n-- Current', 4) });
  p.feed(dump.slice(dump.indexOf('--\n-- Current Database: `shard_0008`'), upTo));
  assert.equal(p.table, undefined, 'a new database: no table until its first data marker');
});
