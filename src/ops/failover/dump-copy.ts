import { spawn } from 'node:child_process';
import { Transform } from 'node:stream';
import { ShardKitError } from '../../errors.js';
import type { HostAdmin } from './host-admin.js';

/**
 * Copies `databases` from `from` to `to` with `mariadb-dump --single-transaction --gtid` piped
 * into `mariadb` (binlog off on the target: the copy must not become the target's own GTIDs).
 * Returns the GTID position of the consistent snapshot (the dump's gtid_slave_pos line).
 */
export async function dumpCopy(admin: HostAdmin, from: string, to: string, databases: string[]): Promise<string> {
  if (databases.length === 0) return '';
  const dump = spawn('mariadb-dump', [
    ...admin.clientArgs(from),
    '--single-transaction', '--gtid', '--master-data=2', '--routines', '--triggers', '--events', '--hex-blob',
    '--databases', ...databases,
  ], { stdio: ['ignore', 'pipe', 'pipe'] });
  const load = spawn('mariadb', [...admin.clientArgs(to), '--init-command=SET SESSION sql_log_bin = 0'], { stdio: ['pipe', 'ignore', 'pipe'] });
  let position: string | undefined;
  let head = '';
  // The position is in a comment near the top: look at the first 1 MB only.
  const scan = new Transform({
    transform(chunk: Buffer, _enc, done) {
      if (position === undefined && head.length < 1 << 20) {
        head += chunk.toString('utf8');
        const m = /gtid_slave_pos\s*=\s*'([^']*)'/.exec(head);
        if (m) position = m[1]!;
      }
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
  dump.stdout.pipe(scan).pipe(load.stdin);
  await Promise.all([exited(dump, 'mariadb-dump'), exited(load, 'mariadb')]);
  if (errors.length > 0) throw new ShardKitError('INTERNAL', `copying ${from} to ${to} failed: ${errors.join('; ')}`);
  if (position === undefined) throw new ShardKitError('INTERNAL', `mariadb-dump of ${from} wrote no GTID position (is its binlog on?)`);
  return position;
}
