import { spawn } from 'node:child_process';
import { Transform } from 'node:stream';
import type { HostAdmin } from '../failover/host-admin.js';
import { toolInput } from './process-streams.js';
import { ShardKitError } from '../../errors.js';

/**
 * Drops the statements that would give replayed transactions their original GTIDs and server id:
 * on a master in gtid_strict_mode those numbers are behind its own, and the replay is new history
 * anyway (it gets the master's next GTIDs and reaches the slave like any write).
 */
function dropGtidSettings(): Transform {
  let carry = '';
  const GTID = /^\/\*M?!100001 SET @@session\.(gtid_domain_id|server_id|gtid_seq_no)=\d+\*\/(\/\*!\*\/;)?$/;
  return new Transform({
    transform(chunk: Buffer, _enc, done) {
      const lines = (carry + chunk.toString('utf8')).split('\n');
      carry = lines.pop()!;
      done(null, lines.filter((l) => !GTID.test(l)).map((l) => `${l}\n`).join(''));
    },
    flush(done) {
      done(null, GTID.test(carry) ? '' : carry);
    },
  });
}

/** `YYYY-MM-DD hh:mm:ss` in UTC (the tool runs with TZ=UTC), whole seconds: a binlog event's time has no finer part. */
export const binlogDatetime = (ms: number) => new Date(Math.floor(ms / 1000) * 1000).toISOString().slice(0, 19).replace('T', ' ');

/**
 * Applies the archived binlog events after `fromGtid` and before `toMs` (whole seconds: events
 * stamped at or after the second that holds toMs are left out) to `master`.
 */
export async function replayBinlogs(admin: HostAdmin, master: string, files: string[], fromGtid: string, toMs: number): Promise<void> {
  if (files.length === 0) throw new ShardKitError('NOT_FOUND', `no archived binlog to replay on ${master}`);
  const reader = spawn('mariadb-binlog', [`--start-position=${fromGtid}`, `--stop-datetime=${binlogDatetime(toMs)}`, '--skip-gtid-strict-mode', ...files], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, TZ: 'UTC' } });
  let err = '';
  reader.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const read = new Promise<number | string>((r) => reader.on('close', (c, s) => r(c ?? s ?? -1)));
  await toolInput('mariadb', admin.clientArgs(master), reader.stdout!.pipe(dropGtidSettings()));
  const code = await read;
  if (code !== 0) throw new ShardKitError('INTERNAL', `mariadb-binlog exited ${code}: ${err.trim().split('\n').slice(-2).join(' | ')}`);
}
