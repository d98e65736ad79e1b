// User sequences, the flagship use of Pinterest's wide-column store: an append-only log of each
// user's recent actions. Row = user id, column = event type, one version per event (value =
// event id); read the latest N events of each type, newest first.
//
//   npx tsx examples/user-sequences/user-sequences.ts [dataDir]
//
// It uses the library directly on <dataDir>/widecolumn (a temporary directory by default); the
// same calls exist over HTTP (see README.md, "Wide-column: user sequences").
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WideColumnStore, compact } from '../../src/widecolumn/index.js';

const EVENT_TYPES = ['repin', 'click', 'search', 'comment'];
const KEEP = 50; // events kept per (user, type): versions beyond this are dropped by compaction
const SHOW = 5;

const given = process.argv[2];
const dataDir = given ?? mkdtempSync(join(tmpdir(), 'shardkit-user-sequences-'));
const store = await WideColumnStore.open(join(dataDir, 'widecolumn'));
try {
  // Events older than 90 days are never returned and leave the disk at the next compaction.
  await store.putDataset('user_sequences', { maxVersions: KEEP, ttlSeconds: 90 * 24 * 3600 });

  // Write: every action is one Put Row, stamped with its event time (out-of-order is fine).
  const users = ['1001', '1002', '1003'];
  const start = Date.now() - 3600_000;
  let eventId = 9_000_000;
  for (let i = 0; i < 1200; i++) {
    const user = users[i % users.length]!;
    const type = EVENT_TYPES[(i * 7) % EVENT_TYPES.length]!;
    await store.putRow('user_sequences', user, [{ column: type, value: String(eventId++), timestamp: start + i * 1000 }]);
  }
  // A burst from one request: several events in one atomic Put Row, server-stamped.
  await store.putRow('user_sequences', '1001', [{ column: 'click', value: String(eventId++) }, { column: 'click', value: String(eventId++) }]);

  // Read: the latest SHOW events of chosen types for one user, newest first.
  const row = await store.getRow('user_sequences', '1001', { columns: ['repin', 'click'], versions: SHOW });
  console.log(`user 1001, latest ${SHOW} repins and clicks:`);
  for (const c of row.columns) {
    console.log(`  ${c.column.padEnd(8)} ${c.cells.map((e) => `${e.value.toString()}@${new Date(e.timestamp).toISOString().slice(11, 19)}`).join('  ')}`);
  }

  // The last event of every type, for several users at once.
  const latest = await store.batchGetRows('user_sequences', users.map((u) => ({ row: u })));
  for (const r of latest) console.log(`user ${r.row}: last ${r.columns.map((c) => `${c.column}=${c.cells[0]!.value.toString()}`).join(', ')}`);

  // The daily job (the service runs it on a schedule): drop versions beyond KEEP.
  const report = await compact(store);
  console.log(`compaction removed ${report.removedExcessVersions} events beyond the newest ${KEEP} per type`);
} finally {
  await store.close();
  if (!given) rmSync(dataDir, { recursive: true, force: true });
}
