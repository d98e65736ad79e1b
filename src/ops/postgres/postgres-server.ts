import { execFile } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { ShardKitError } from '../../errors.js';
import { DEFAULT_POSTGRES_BIN, superuserQuery } from './postgres-instance.js';
import { procStat, processRunning } from '../proc-stat.js';
import { formatLsn, parseLsn, recordSearchStart, WAL_SEGMENT_BYTES } from '../../storage/postgres/index.js';

/** What identifies one persistent local PostgreSQL server; saved as `<dir>/instance.json`. */
export interface PostgresServerSpec {
  name: string;
  dir: string;
  port: number;
}

/**
 * Small-memory settings for dev servers. Unlike PostgresInstance (a throwaway test server), these
 * keep fsync on: they hold a developer's data across restarts. wal_level=logical: a shard move
 * (src/moves/postgres) publishes the moving shards' tables from the source master and subscribes
 * on the target master; it also serves streaming standbys. Wal senders and slots: one per
 * standby, one per move's subscription plus its initial-copy workers (each a temporary slot).
 * A standby needs max_wal_senders and max_worker_processes at least its primary's: every dev
 * server gets the same settings.
 * hot_standby lets `dev status` read a standby.
 */
const SETTINGS: Record<string, string | number> = {
  listen_addresses: '127.0.0.1',
  shared_buffers: '16MB',
  max_connections: 100,
  wal_level: 'logical',
  max_wal_senders: 20,
  max_replication_slots: 20,
  // On a move's target: the initial copy runs one table per sync worker, each with its own
  // temporary slot and wal sender on the source.
  max_worker_processes: 16,
  max_logical_replication_workers: 10,
  max_sync_workers_per_subscription: 4,
  wal_keep_size: '64MB',
  hot_standby: 'on',
  // A standby must notice a frozen (SIGSTOP) or cut-off master within seconds, not PostgreSQL's
  // default 60 s: `shardkit heal` fails a master over only when its standby agrees it lost it
  // (pg_stat_wal_receiver no longer streaming). The receiver pings an idle master after half of
  // this, so a live one is never dropped (docs/failover.md: set the same on a fleet's standbys).
  wal_receiver_timeout: '5s',
  logging_collector: 'off',
  log_min_messages: 'warning',
};

function osUser(name: string): { uid: number; gid: number } | undefined {
  for (const line of readFileSync('/etc/passwd', 'utf8').split('\n')) {
    const f = line.split(':');
    if (f[0] === name && f.length >= 4) return { uid: Number(f[2]), gid: Number(f[3]) };
  }
  return undefined;
}

/**
 * One local PostgreSQL 15 server that outlives the process that started it (`pg_ctl start`), like
 * MariadbInstance: its datadir, socket and log under `dir`, 127.0.0.1 only, trust authentication
 * on loopback (superuser `postgres`). As root, everything runs as the `postgres` system user.
 */
export class PostgresServer {
  readonly name: string;
  readonly dir: string;
  readonly port: number;
  private readonly binDir = process.env.SHARDKIT_POSTGRES_BIN ?? DEFAULT_POSTGRES_BIN;
  private readonly runAs = process.getuid?.() === 0 ? osUser('postgres') : undefined;

  constructor(spec: PostgresServerSpec) {
    this.name = spec.name;
    this.dir = resolve(spec.dir);
    this.port = spec.port;
    if (process.getuid?.() === 0 && !this.runAs) throw new ShardKitError('MISSING_DEPENDENCY', 'running as root and there is no "postgres" system user to run PostgreSQL as (apt-get install postgresql)');
  }

  static load(dir: string): PostgresServer | undefined {
    const file = join(resolve(dir), 'instance.json');
    if (!existsSync(file)) return undefined;
    return new PostgresServer({ ...(JSON.parse(readFileSync(file, 'utf8')) as PostgresServerSpec), dir });
  }

  get host(): '127.0.0.1' {
    return '127.0.0.1';
  }
  get dataDir(): string {
    return join(this.dir, 'data');
  }
  get socket(): string {
    return join(this.dir, `.s.PGSQL.${this.port}`);
  }
  get logFile(): string {
    return join(this.dir, 'postgres.log');
  }

  writeFiles(): void {
    mkdirSync(this.dir, { recursive: true });
    writeFileSync(join(this.dir, 'instance.json.tmp'), `${JSON.stringify({ name: this.name, dir: this.dir, port: this.port }, null, 2)}\n`);
    renameSync(join(this.dir, 'instance.json.tmp'), join(this.dir, 'instance.json'));
    this.own(this.dir);
  }

  /** As root, hands `path` (recursively) to the postgres user, which runs the server. */
  private own(path: string): void {
    if (!this.runAs) return;
    chownSync(path, this.runAs.uid, this.runAs.gid);
    if (statSync(path).isDirectory()) for (const f of readdirSync(path)) this.own(join(path, f));
  }

  private run(bin: string, args: string[], timeoutMs = 120_000, options: { stdoutOnError?: boolean } = {}): Promise<string> {
    return new Promise((done, fail) => {
      execFile(join(this.binDir, bin), args, {
        ...(this.runAs ? { uid: this.runAs.uid, gid: this.runAs.gid } : {}),
        cwd: this.dir, timeout: timeoutMs, maxBuffer: 256 * 1024 * 1024, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C' },
      }, (err, stdout, stderr) => {
        if (err && !(options.stdoutOnError && err.code !== undefined && typeof err.code === 'number')) fail(new ShardKitError('INTERNAL', `${bin} for ${this.name} failed: ${(stderr || err.message).trim().split('\n').slice(-2).join(' | ')}`));
        else done(stdout);
      });
    });
  }

  /**
   * Transactions this (stopped) server committed in its WAL at or after `lsn`: after a crash, what
   * it may have acknowledged that a standby which received WAL up to `lsn` lacks. pg_waldump reads
   * to the end of the WAL and exits non-zero there, which is the normal end here.
   */
  async commitsAfter(lsn: string): Promise<number> {
    const control = await this.run('pg_controldata', ['-D', this.dataDir]);
    // A commit record the standby got only part of starts before `lsn` (a lost write uncounted,
    // seen once in CI): read from recordSearchStart and count every commit that ends past `lsn`.
    const at = parseLsn(lsn);
    const from = recordSearchStart(at);
    // The timeline of the WAL that holds `from` now: a server promoted moments ago writes on its new
    // timeline while its control file still names the old one until its first checkpoint, and the
    // old timeline's files end at the switch (a lost write uncounted, seen again in CI).
    const tli = segmentTimeline(readdirSync(join(this.dataDir, 'pg_wal')), from) ?? String(Number(/Latest checkpoint's TimeLineID:\s*(\d+)/.exec(control)?.[1] ?? '1'));
    const out = await this.run('pg_waldump', ['-p', join(this.dataDir, 'pg_wal'), '-t', tli, '-s', formatLsn(from), '-r', 'Transaction'], 120_000, { stdoutOnError: true });
    return commitsEndingAfter(out, at);
  }

  /** The LSN of the last checkpoint in the control file: after a clean stop, the end of its WAL. */
  async checkpointLsn(): Promise<string> {
    const out = await this.run('pg_controldata', ['-D', this.dataDir]);
    const m = /Latest checkpoint location:\s*([0-9A-F]+\/[0-9A-F]+)/.exec(out);
    if (!m) throw new ShardKitError('INTERNAL', `pg_controldata of ${this.name} shows no checkpoint location`);
    return m[1]!;
  }

  isInitialized(): boolean {
    return existsSync(join(this.dataDir, 'PG_VERSION'));
  }

  /** A new, empty master datadir (initdb), unless one exists. */
  async initMaster(): Promise<void> {
    this.writeFiles();
    if (this.isInitialized()) return;
    await this.run('initdb', ['-D', this.dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C']);
  }

  /**
   * Replaces the datadir with a streaming standby of `master` (pg_basebackup -R: a consistent
   * copy plus standby.signal and primary_conninfo). The server must be stopped.
   */
  async initStandbyOf(master: PostgresServer): Promise<void> {
    if (this.pid !== undefined) throw new ShardKitError('INVALID_ARGUMENT', `${this.name} is running: stop it before rebuilding it`);
    this.writeFiles();
    rmSync(this.dataDir, { recursive: true, force: true });
    await this.run('pg_basebackup', ['-h', master.host, '-p', String(master.port), '-U', 'postgres', '-D', this.dataDir, '-R', '-X', 'stream', '-c', 'fast']);
  }

  /**
   * Replaces the datadir of the stopped server with what `fill` writes into the empty directory
   * (a restore: a base backup's tar extracted), then hands it to the server's user.
   */
  async replaceDataDir(fill: (dataDir: string) => Promise<void>): Promise<void> {
    if (this.pid !== undefined) throw new ShardKitError('INVALID_ARGUMENT', `${this.name} is running: stop it before restoring into it`);
    this.writeFiles();
    rmSync(this.dataDir, { recursive: true, force: true });
    mkdirSync(this.dataDir, { mode: 0o700 });
    await fill(this.dataDir);
    this.own(this.dataDir);
  }

  /**
   * At the next start, recovery replays WAL (from `restoreCommand`, else what pg_wal holds) up to
   * the target, then promotes: the server leaves a restore as a primary on a new timeline. A
   * restored standby's own signal and primary_conninfo are removed.
   */
  setRecoveryTarget(target: { lsn: string } | { time: string }, restoreCommand = 'false'): void {
    rmSync(join(this.dataDir, 'standby.signal'), { force: true });
    const file = join(this.dataDir, 'postgresql.auto.conf');
    const keep = (existsSync(file) ? readFileSync(file, 'utf8').split('\n') : []).filter((l) => l !== '' && !/^(primary_conninfo|primary_slot_name|restore_command|recovery_target\w*)\s*=/.test(l));
    const quote = (v: string) => `'${v.replace(/'/g, "''")}'`;
    keep.push(`restore_command = ${quote(restoreCommand)}`);
    keep.push('lsn' in target ? `recovery_target_lsn = ${quote(target.lsn)}` : `recovery_target_time = ${quote(target.time)}`);
    keep.push("recovery_target_action = 'promote'");
    writeFileSync(file, `${keep.join('\n')}\n`);
    writeFileSync(join(this.dataDir, 'recovery.signal'), '');
    this.own(file);
    this.own(join(this.dataDir, 'recovery.signal'));
  }

  /** After a restore promoted: the recovery settings off again, so a standby copied from this server does not inherit them. */
  async clearRecoveryTarget(): Promise<void> {
    for (const name of ['restore_command', 'recovery_target_lsn', 'recovery_target_time', 'recovery_target_action']) await this.sql(`ALTER SYSTEM RESET ${name}`);
  }

  /** Waits until the server has left recovery (a restore reached its target and promoted). */
  async waitPromoted(timeoutMs = 120_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const [r] = await this.sql<{ r: boolean }>('SELECT pg_is_in_recovery() AS r').catch(() => [{ r: true }]);
      if (r?.r === false) return;
      if (!this.isRunning()) throw new ShardKitError('INTERNAL', `${this.name} stopped during recovery: ${readFileSync(this.logFile, 'utf8').trim().split('\n').slice(-3).join(' | ')}`);
      if (Date.now() > deadline) throw new ShardKitError('INTERNAL', `${this.name} did not finish its recovery within ${timeoutMs} ms`);
      await sleep(50);
    }
  }

  /** A setting ALTER SYSTEM wrote taken out of postgresql.auto.conf, on a stopped server (it applies at the next start). */
  resetAutoConf(name: string): void {
    const file = join(this.dataDir, 'postgresql.auto.conf');
    if (!existsSync(file)) return;
    const keep = readFileSync(file, 'utf8').split('\n').filter((l) => !new RegExp(`^${name}\\s*=`).test(l));
    writeFileSync(file, keep.join('\n'));
  }

  /** Makes the server start as a standby (read-only) even if it was a primary: the fence for a failed master. */
  markStandby(): void {
    if (!this.isInitialized()) return;
    const file = join(this.dataDir, 'standby.signal');
    if (!existsSync(file)) {
      writeFileSync(file, '');
      this.own(file);
    }
  }

  get pid(): number | undefined {
    try {
      const pid = Number(readFileSync(join(this.dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
      return Number.isSafeInteger(pid) && pid > 0 && processRunning(pid) ? pid : undefined;
    } catch {
      return undefined;
    }
  }

  isRunning(): boolean {
    return this.pid !== undefined;
  }

  async start(): Promise<void> {
    if (this.isRunning()) return;
    // cluster_name names this server's WAL receiver on its primary (synchronous_standby_names).
    const opts = [`-p ${this.port}`, `-k ${this.dir}`, `-c cluster_name=${this.name}`, ...Object.entries(SETTINGS).map(([k, v]) => `-c ${k}=${v}`)].join(' ');
    // Right after a kill -9 the old backends may still hold the shared memory for a moment.
    for (let attempt = 0; ; attempt++) {
      try {
        await this.run('pg_ctl', ['-D', this.dataDir, '-l', this.logFile, '-o', opts, '-w', '-t', '60', 'start']);
        return;
      } catch (err) {
        if (attempt >= 5 || this.isRunning()) throw err;
        await sleep(500);
      }
    }
  }

  async stop(): Promise<void> {
    if (!this.isRunning()) return;
    await this.run('pg_ctl', ['-D', this.dataDir, '-m', 'fast', '-w', '-t', '60', 'stop']);
  }

  /**
   * kill -9 of the postmaster and its backends at once (a crash of the machine): killing the
   * postmaster alone leaves backends that may still commit (and acknowledge) a transaction.
   */
  async kill(): Promise<void> {
    const pid = this.pid;
    if (pid === undefined) return;
    // Stopped first, so that it forks no child between the listing below and its SIGKILL: such a
    // child outlives it (a walsender in CREATE_REPLICATION_SLOT waits for the dead server's
    // transactions for ever), holds its shared memory and no restart can happen (seen in
    // test/moves/postgres-move-crash: `pre-existing shared memory block ... is still in use`).
    try {
      process.kill(pid, 'SIGSTOP');
      // The signal is delivered asynchronously: wait (briefly) until it has stopped.
      for (let i = 0; i < 50 && procStat(pid)?.state !== 'T' && processRunning(pid); i++) await sleep(10);
    } catch {
      // already gone
    }
    const children = readdirSync('/proc').filter((p) => /^\d+$/.test(p)).map(Number).filter((p) => {
      return procStat(p)?.ppid === pid;
    });
    for (const p of [pid, ...children]) {
      try {
        process.kill(p, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    for (const p of [pid, ...children]) while (processRunning(p)) await sleep(20);
  }

  /** Rewrites the standby's primary_conninfo (it is in postgresql.auto.conf, written by pg_basebackup -R). */
  setPrimary(master: PostgresServer): void {
    const file = join(this.dataDir, 'postgresql.auto.conf');
    const lines = existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter((l) => !l.startsWith('primary_conninfo')) : [];
    lines.push(`primary_conninfo = 'host=${master.host} port=${master.port} user=postgres application_name=${this.name}'`);
    writeFileSync(file, `${lines.filter((l) => l !== '').join('\n')}\n`);
    this.own(file);
  }

  async sql<T extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values?: unknown[], database = 'postgres'): Promise<T[]> {
    return superuserQuery<T>({ host: this.host, port: this.port, database, connectTimeoutMs: 3000 }, text, values);
  }
}

export { formatLsn, parseLsn };

/**
 * The newest timeline (decimal, as pg_waldump -t takes it) among the WAL segment files named in
 * `files` that hold the byte `at` (16 MiB segments), or undefined when none does. A promotion
 * copies the segment it happened in to the new timeline, so the newest one holds everything
 * written since, up to the server's end of WAL.
 */
export function segmentTimeline(files: readonly string[], at: bigint): string | undefined {
  const segno = at / WAL_SEGMENT_BYTES;
  const perId = 0x1_0000_0000n / WAL_SEGMENT_BYTES;
  const hex = (n: bigint) => n.toString(16).toUpperCase().padStart(8, '0');
  const suffix = `${hex(segno / perId)}${hex(segno % perId)}`;
  let best: number | undefined;
  for (const f of files) {
    if (!/^[0-9A-F]{24}$/.test(f) || !f.endsWith(suffix)) continue;
    const tli = parseInt(f.slice(0, 8), 16);
    if (best === undefined || tli > best) best = tli;
  }
  return best === undefined ? undefined : String(best);
}

/** Commit records in pg_waldump's output that end past `at` (a record ends at its LSN plus its total length). */
export function commitsEndingAfter(waldump: string, at: bigint): number {
  let commits = 0;
  for (const line of waldump.split('\n')) {
    if (!/desc: COMMIT\b/.test(line)) continue;
    const m = /len \(rec\/tot\):\s*\d+\/\s*(\d+), .*lsn: ([0-9A-F]+\/[0-9A-F]+)/.exec(line);
    if (m === null || parseLsn(m[2]!) + BigInt(m[1]!) > at) commits++;
  }
  return commits;
}
