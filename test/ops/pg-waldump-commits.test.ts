/**
 * Counting what a PostgreSQL emergency failover lost (#28): commits in the old master's WAL that
 * end past what the standby received. A commit record the standby got only part of starts before
 * that LSN; counting from the LSN alone missed it (1 acknowledged write lost, 0 reported, seen in
 * CI on test/failover/postgres-pairs). Server-free: pg_waldump's output as it prints it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { commitsEndingAfter, formatLsn, parseLsn, segmentTimeline } from '../../src/ops/postgres/postgres-server.js';

const line = (lsn: string, tot: number, desc: string) => `rmgr: Transaction len (rec/tot):     ${tot}/    ${tot}, tx:        751, lsn: ${lsn}, prev 0/0301F280, desc: ${desc}`;

test('LSNs parse and print as PostgreSQL writes them', () => {
  assert.equal(parseLsn('0/3000060'), 0x3000060n);
  assert.equal(parseLsn('1/A0'), (1n << 32n) + 0xa0n);
  assert.equal(formatLsn(parseLsn('2F/1C0FFEE8')), '2F/1C0FFEE8');
});

test('a commit record straddling the received LSN is counted; one that ended before it is not', () => {
  const received = parseLsn('0/3000100');
  const out = [
    line('0/3000000', 34, 'COMMIT 2026-11-28 12:00:00.000001 UTC'), // ends 0/3000022: the standby has it
    line('0/30000F0', 34, 'COMMIT 2026-11-28 12:00:00.000002 UTC'), // ends 0/3000112: only part received
    line('0/3000118', 66, 'ABORT 2026-11-28 12:00:00.000003 UTC'),
    line('0/3000160', 34, 'COMMIT 2026-11-28 12:00:00.000004 UTC'), // wholly after
    'pg_waldump: error: error in WAL record at 0/30001A0: invalid record length',
  ].join('\n');
  assert.equal(commitsEndingAfter(out, received), 2);
});

test('the WAL is read on the newest timeline that holds the segment: a server promoted moments ago writes on its new timeline while its control file still names the old one', () => {
  // Promoted in segment 0/5: timeline 1 holds segments 3..5, timeline 2 a copy of 5 and then 6.
  const files = ['000000010000000000000003', '000000010000000000000004', '000000010000000000000005', '000000020000000000000005', '000000020000000000000006', '00000002.history', 'archive_status'];
  assert.equal(segmentTimeline(files, parseLsn('0/5000100')), '2');
  assert.equal(segmentTimeline(files, parseLsn('0/6FFFFFF')), '2');
  assert.equal(segmentTimeline(files, parseLsn('0/4000000')), '1', 'before the switch, only the old timeline has it');
  assert.equal(segmentTimeline(files, parseLsn('0/7000000')), undefined);
  // Timelines and segment ids are hex: timeline 10 (0xA) and an LSN past 4 GiB (segment id 1, segment 0x2A).
  assert.equal(segmentTimeline(['00000009000000010000002A', '0000000A000000010000002A'], parseLsn('1/2A000010')), '10');
});
