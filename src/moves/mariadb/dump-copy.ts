import { spawn } from 'node:child_process';
import { Transform } from 'node:stream';
import { ShardKitError } from '../../errors.js';
import type mysql from 'mysql2/promise';
import type { TableProgress } from '../move-engine.js';
import { DumpTableProgress } from './dump-table-progress.js';

/**
 * What a dump needs of its hosts: the mariadb client's arguments to reach one as an administrator,
 * and an admin connection (the fleet tools' HostAdmin has both: src/ops/failover/host-admin.ts).
 */
export interface DumpAdmin {
  clientArgs(host: string): string[];
  connect(host: string): Promise<mysql.Connection>;
}

export interface DumpCopyOptions {
  /** `db.table` names the dump leaves out (a shard move copies only the object tables of a database). */
  ignoreTables?: readonly string[];
  /**
   * Told the bytes of the dump streamed so far, and the rows (an estimate read off the stream: the
   * tuples of its INSERT statements; exact counts are the loader's business): at most every
   * `BYTES_EVERY_MS` and whenever a table starts, and once at the end; with the table being dumped now (none at the end).
   */
  onBytes?: (bytes: number, rows: number, tables: TableProgress[]) => void;
  /**
   * Awaited before each piece of the dump goes on to the loaders, with the rows in it (estimated
   * as for onBytes): a copy that must slow down (a rate limit, a lagging slave) waits here, and
   * the pipe's back-pressure pauses mariadb-dump meanwhile.
   */
  throttle?: (rows: number, bytes: number) => Promise<void>;
  /**
   * The dump starts only once this settles (the loaders are spawned at once): a parallel copy
   * takes its lock meanwhile, so that only the dumps' own start is under it. A rejection stops the loaders.
   */
  startAfter?: Promise<void>;
  /** Told once the dump's consistent snapshot is open (its first database is being dumped), or at its end. */
  onSnapshot?: () => void;
  /** A parallel copy's budget for FLUSH TABLES WITH READ LOCK (read-lock.ts, READ_LOCK_MAX_MS). */
  readLockMaxMs?: number;
  /**
   * The schema alone (tables, routines, events; no rows, no triggers), with no GTID position (the
   * move's text copy takes its own, tsv-copy.ts): no FLUSH TABLES WITH READ LOCK on the source.
   */
  schemaOnly?: boolean;
}

export { dumpRows } from './dump-row-count.js';

/** How often onBytes hears about a running dump. */
export const BYTES_EVERY_MS = 250;

/**
 * Copies `databases` from `from` to `to` with `mariadb-dump --single-transaction --gtid` piped
 * into `mariadb` (binlog off on the target: the copy must not become the target's own GTIDs).
 * `to` may name several hosts (a move loads one dump into the target master and its slave, so
 * both hold the same snapshot). Returns the GTID position of the consistent snapshot (the dump's
 * gtid_slave_pos line).
 */
export async function dumpCopy(admin: DumpAdmin, from: string, to: string | readonly string[], databases: string[], options: DumpCopyOptions = {}): Promise<string> {
  if (databases.length === 0) return '';
  const targets = typeof to === 'string' ? [to] : [...to];
  // The loaders first: they only wait on stdin, so they are up before a parallel copy's lock.
  const loads = targets.map((t) => spawn('mariadb', [...admin.clientArgs(t), '--init-command=SET SESSION sql_log_bin = 0'], { stdio: ['pipe', 'ignore', 'pipe'] }));
  // Spawned now, started later: a shell that waits for one line on stdin, then becomes the dump
  // (exec keeps its pid and pipes). Under a parallel copy's lock only that line is written, so
  // the lock does not wait for Node to fork four processes (~4 ms each with a large heap).
  const dump = spawn('sh', ['-c', 'read -r _ && exec mariadb-dump "$@"', 'mariadb-dump',
    ...admin.clientArgs(from),
    // --verbose: its progress lines on stderr (unbuffered) say when the snapshot is open, long
    // before the buffered stdout shows the first database.
    '--single-transaction', ...(options.schemaOnly === true ? ['--no-data', '--skip-triggers'] : ['--gtid', '--master-data=2', '--triggers']), '--routines', '--events', '--hex-blob', '--verbose',
    // No tablespace queries (shards have none): they ran between the snapshot and its signal.
    '--no-tablespaces',
    ...(options.ignoreTables ?? []).map((t) => `--ignore-table=${t}`),
    '--databases', ...databases,
  ], { stdio: ['pipe', 'pipe', 'pipe'] });
  dump.stdin!.on('error', () => undefined);
  if (options.startAfter !== undefined) {
    try {
      await options.startAfter;
    } catch (e) {
      for (const p of [dump, ...loads]) p.kill();
      throw e;
    }
  }
  dump.stdin!.end('go\n');
  let position: string | undefined;
  // MariaDB 10.11 writes the position as a comment after the data ("the deferred gtid setting"),
  // not near the top: scan the whole stream, carrying a short tail across chunk borders. (Only
  // the first 1 MB used to be scanned: any dump larger than that failed with "no GTID position".)
  let carry = '';
  let bytes = 0;
  let rows = 0;
  let toldAt = 0;
  let snapped = false;
  const tables = new DumpTableProgress();
  const current = () => {
    const t = tables.table;
    return t === undefined ? [] : [t];
  };
  const snapshotOpen = () => {
    if (snapped) return;
    snapped = true;
    options.onSnapshot?.();
  };
  const scan = new Transform({
    transform(chunk: Buffer, _enc, done) {
      bytes += chunk.length;
      const piece = chunk.toString('latin1');
      const before = tables.table?.table;
      const n = tables.feed(piece);
      rows += n;
      // A table that starts is told at once (before the throttle can hold its first rows).
      if (options.onBytes !== undefined && (Date.now() - toldAt >= BYTES_EVERY_MS || tables.table?.table !== before)) {
        toldAt = Date.now();
        options.onBytes(bytes, rows, current());
      }
      const text = carry + piece;
      // The transaction is open before the first database is dumped.
      if (!snapped && /-- Current Database: /.test(text)) snapshotOpen();
      const m = /gtid_slave_pos\s*=\s*'([^']*)'/.exec(text);
      if (m) position = m[1]!;
      carry = text.slice(-256);
      if (options.throttle === undefined) done(null, chunk);
      else options.throttle(n, chunk.length).then(() => done(null, chunk), (err: Error) => done(err));
    },
  });
  const errors: string[] = [];
  // Any part that fails stops the others: a loader whose server died (kill -9 of the target
  // master mid-copy) stops draining its stdin, which held the dump and the other loaders for good
  // (test/moves/mariadb-copy-crash.test.ts).
  const stopAll = () => {
    dump.kill();
    for (const l of loads) l.kill();
    // The dump's stdout may be paused behind a dead loader (backpressure): unread, it never sees
    // its end, so the dump's 'close' never comes and the copy hung for ever (a CI run waited 15
    // minutes). Drained and dropped, it ends once the killed dump is gone.
    dump.stdout!.unpipe();
    dump.stdout!.resume();
  };
  /** `progress`: told each stderr line; true keeps it out of the error message. */
  const exited = (p: ReturnType<typeof spawn>, what: string, progress?: (line: string) => boolean) => new Promise<void>((resolve) => {
    let err = '';
    let partial = '';
    p.stderr!.on('data', (d: Buffer) => {
      const lines = (partial + d.toString()).split('\n');
      partial = lines.pop()!;
      for (const line of lines) if (progress?.(line) !== true) err += `${line}\n`;
    });
    p.on('error', (e) => errors.push(`${what}: ${e.message}`));
    p.on('close', (code, signal) => {
      if (code !== 0 && errors.length === 0) errors.push(`${what} exited ${code ?? signal}: ${(err + partial).trim().split('\n').slice(-2).join(' | ')}`);
      if (code !== 0) stopAll();
      resolve();
    });
  });
  // A throttle that fails (its lag probe lost the slave, say) stops the copy: the move reports it, nothing half-loaded is kept.
  scan.on('error', (e) => {
    errors.push(`throttle: ${e.message}`);
    stopAll();
  });
  dump.stdout.pipe(scan);
  for (const [i, load] of loads.entries()) {
    // A loader that dies early closes its stdin: report its exit code, not an EPIPE crash.
    load.stdin!.on('error', (e) => errors.push(`mariadb (${targets[i]}) stdin: ${e.message}`));
    scan.pipe(load.stdin!);
  }
  // The dump's verbose lines are progress: "-- Setting savepoint..." comes once START TRANSACTION
  // WITH CONSISTENT SNAPSHOT and UNLOCK TABLES are done.
  const dumpProgress = (line: string) => {
    if (!line.startsWith('-- ')) return false;
    if (/^-- (Setting savepoint|Retrieving table structure)/.test(line)) snapshotOpen();
    return true;
  };
  await Promise.all([exited(dump, 'mariadb-dump', dumpProgress), ...loads.map((l, i) => exited(l, `mariadb (${targets[i]})`))]);
  snapshotOpen();
  if (errors.length > 0) throw new ShardKitError('INTERNAL', `copying ${from} to ${targets.join(' and ')} failed: ${errors.join('; ')}`);
  if (position === undefined && options.schemaOnly !== true) throw new ShardKitError('INTERNAL', `mariadb-dump of ${from} wrote no GTID position (is its binlog on?)`);
  options.onBytes?.(bytes, rows, []);
  return position ?? '';
}
