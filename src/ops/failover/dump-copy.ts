import { spawn } from 'node:child_process';
import { Transform } from 'node:stream';
import { ShardKitError } from '../../errors.js';
import type { HostAdmin } from './host-admin.js';

export interface DumpCopyOptions {
  /** `db.table` names the dump leaves out (a shard move copies only the object tables of a database). */
  ignoreTables?: readonly string[];
  /** Told the bytes of the dump streamed so far: at most every `BYTES_EVERY_MS`, and once at the end. */
  onBytes?: (bytes: number) => void;
}

/** How often onBytes hears about a running dump. */
export const BYTES_EVERY_MS = 250;

/**
 * Copies `databases` from `from` to `to` with `mariadb-dump --single-transaction --gtid` piped
 * into `mariadb` (binlog off on the target: the copy must not become the target's own GTIDs).
 * `to` may name several hosts (a move loads one dump into the target master and its slave, so
 * both hold the same snapshot). Returns the GTID position of the consistent snapshot (the dump's
 * gtid_slave_pos line).
 */
export async function dumpCopy(admin: HostAdmin, from: string, to: string | readonly string[], databases: string[], options: DumpCopyOptions = {}): Promise<string> {
  if (databases.length === 0) return '';
  const targets = typeof to === 'string' ? [to] : [...to];
  const dump = spawn('mariadb-dump', [
    ...admin.clientArgs(from),
    '--single-transaction', '--gtid', '--master-data=2', '--routines', '--triggers', '--events', '--hex-blob',
    ...(options.ignoreTables ?? []).map((t) => `--ignore-table=${t}`),
    '--databases', ...databases,
  ], { stdio: ['ignore', 'pipe', 'pipe'] });
  const loads = targets.map((t) => spawn('mariadb', [...admin.clientArgs(t), '--init-command=SET SESSION sql_log_bin = 0'], { stdio: ['pipe', 'ignore', 'pipe'] }));
  let position: string | undefined;
  // MariaDB 10.11 writes the position as a comment after the data ("the deferred gtid setting"),
  // not near the top: scan the whole stream, carrying a short tail across chunk borders. (Only
  // the first 1 MB used to be scanned: any dump larger than that failed with "no GTID position".)
  let carry = '';
  let bytes = 0;
  let toldAt = 0;
  const scan = new Transform({
    transform(chunk: Buffer, _enc, done) {
      bytes += chunk.length;
      if (options.onBytes !== undefined && Date.now() - toldAt >= BYTES_EVERY_MS) {
        toldAt = Date.now();
        options.onBytes(bytes);
      }
      const text = carry + chunk.toString('latin1');
      const m = /gtid_slave_pos\s*=\s*'([^']*)'/.exec(text);
      if (m) position = m[1]!;
      carry = text.slice(-256);
      done(null, chunk);
    },
  });
  const errors: string[] = [];
  const exited = (p: ReturnType<typeof spawn>, what: string) => new Promise<void>((resolve) => {
    let err = '';
    p.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    p.on('error', (e) => errors.push(`${what}: ${e.message}`));
    p.on('close', (code) => {
      if (code !== 0) errors.push(`${what} exited ${code}: ${err.trim().split('\n').slice(-2).join(' | ')}`);
      resolve();
    });
  });
  dump.stdout.pipe(scan);
  for (const [i, load] of loads.entries()) {
    // A loader that dies early closes its stdin: report its exit code, not an EPIPE crash.
    load.stdin!.on('error', (e) => errors.push(`mariadb (${targets[i]}) stdin: ${e.message}`));
    scan.pipe(load.stdin!);
  }
  await Promise.all([exited(dump, 'mariadb-dump'), ...loads.map((l, i) => exited(l, `mariadb (${targets[i]})`))]);
  if (errors.length > 0) throw new ShardKitError('INTERNAL', `copying ${from} to ${targets.join(' and ')} failed: ${errors.join('; ')}`);
  if (position === undefined) throw new ShardKitError('INTERNAL', `mariadb-dump of ${from} wrote no GTID position (is its binlog on?)`);
  options.onBytes?.(bytes);
  return position;
}
