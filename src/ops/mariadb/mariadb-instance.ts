import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, openSync, closeSync, readFileSync, writeFileSync, renameSync } from 'node:fs';
import { connect as netConnect } from 'node:net';
import { userInfo } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import mysql from 'mysql2/promise';
import { ShardKitError } from '../../errors.js';
import { findMariadbBinaries, type MariadbBinaries } from './mariadb-binaries.js';
import { pickFreePort } from '../free-port.js';
import { processRunning } from '../proc-stat.js';

/** Extra `[mysqld]` settings, e.g. `{ auto_increment_increment: 2, auto_increment_offset: 1, read_only: true }`. */
export type MysqldSettings = Record<string, string | number | boolean>;

/** What identifies one local server; persisted as `<dir>/instance.json` so a later process can manage it. */
export interface MariadbInstanceSpec {
  /** Server name (the host name in the shard map, e.g. MySQL001A). */
  name: string;
  /** Directory holding everything of this server: my.cnf, data/, socket, pid file, error log. */
  dir: string;
  port: number;
  serverId: number;
  /** Added to (and overriding) the base low-memory settings. */
  settings?: MysqldSettings;
  /** Plugins loaded at start (`plugin-load-add`), e.g. `['ha_rocksdb']` for MyRocks. */
  plugins?: string[];
}

export interface MariadbInstanceStatus {
  name: string;
  host: '127.0.0.1';
  port: number;
  socket: string;
  pid: number | null;
  running: boolean;
}

/**
 * Low-memory settings so that 16+ servers fit on a small machine. Durability is traded for speed
 * the way a test cluster wants: innodb_flush_log_at_trx_commit=2 writes the redo log to the OS at
 * every commit and syncs once a second, so a killed mariadbd (kill -9) loses nothing, only an OS
 * crash can lose the last second. Tables live in the system tablespace (innodb_file_per_table=OFF)
 * because 4096 shards x 10 tables as separate .ibd files would cost several times the disk.
 */
export const BASE_SETTINGS: MysqldSettings = {
  'bind-address': '127.0.0.1',
  'skip-name-resolve': true,
  performance_schema: false,
  innodb_buffer_pool_size: '32M',
  innodb_log_file_size: '32M',
  innodb_log_buffer_size: '4M',
  innodb_flush_log_at_trx_commit: 2,
  innodb_file_per_table: false,
  // The system tablespace grows in 8 MB steps instead of 64 MB: each empty table costs ~20 KB.
  innodb_autoextend_increment: 8,
  innodb_stats_persistent: false,
  sync_binlog: 0,
  key_buffer_size: '1M',
  aria_pagecache_buffer_size: '8M',
  query_cache_type: 0,
  query_cache_size: 0,
  tmp_table_size: '8M',
  max_heap_table_size: '8M',
  max_connections: 300,
  thread_cache_size: 16,
  table_open_cache: 2048,
  table_definition_cache: 2048,
  character_set_server: 'utf8mb4',
  collation_server: 'utf8mb4_bin',
};

/** Low-memory MyRocks settings, added when ha_rocksdb is loaded (its block cache defaults to 512 MB). */
export const ROCKSDB_SETTINGS: MysqldSettings = {
  rocksdb_block_cache_size: '16M',
  rocksdb_max_background_jobs: 2,
  // Keys up to 3072 bytes instead of 767: a wide-column cell key holds a column name of up to 1024 bytes.
  rocksdb_large_prefix: true,
};

const MAX_SOCKET_PATH = 107;

function formatValue(v: string | number | boolean): string {
  if (typeof v === 'boolean') return v ? 'ON' : 'OFF';
  return String(v);
}

/**
 * One local mariadbd: its own datadir, port (127.0.0.1 only), unix socket and pid file under `dir`.
 * root logs in over the socket without a password (unix_socket auth, as the OS user who created it).
 * Every method is idempotent and safe to call from another process than the one that started it.
 */
export class MariadbInstance {
  readonly name: string;
  readonly dir: string;
  readonly serverId: number;
  readonly settings: MysqldSettings;
  readonly plugins: string[];
  private currentPort: number;
  private readonly binaries: () => MariadbBinaries;

  constructor(spec: MariadbInstanceSpec, options: { binaries?: MariadbBinaries } = {}) {
    this.name = spec.name;
    this.dir = resolve(spec.dir);
    this.currentPort = spec.port;
    this.serverId = spec.serverId;
    this.settings = { ...(spec.settings ?? {}) };
    this.plugins = [...(spec.plugins ?? [])];
    this.binaries = () => options.binaries ?? findMariadbBinaries();
    if (this.socket.length > MAX_SOCKET_PATH) {
      throw new ShardKitError('INVALID_ARGUMENT', `directory ${this.dir} is too long for a unix socket path (${this.socket.length} > ${MAX_SOCKET_PATH} characters): use a shorter --dir`);
    }
  }

  /** A new instance on a free loopback port (chosen by the OS) unless `port` is given. */
  static async create(spec: Omit<MariadbInstanceSpec, 'port'> & { port?: number }, options: { binaries?: MariadbBinaries } = {}): Promise<MariadbInstance> {
    const port = spec.port ?? (await pickFreePort());
    return new MariadbInstance({ ...spec, port }, options);
  }

  /** The instance whose `instance.json` is in `dir`, or undefined. */
  static load(dir: string, options: { binaries?: MariadbBinaries } = {}): MariadbInstance | undefined {
    const file = join(resolve(dir), 'instance.json');
    if (!existsSync(file)) return undefined;
    const spec = JSON.parse(readFileSync(file, 'utf8')) as MariadbInstanceSpec;
    return new MariadbInstance({ ...spec, dir }, options);
  }

  get port(): number {
    return this.currentPort;
  }
  get host(): '127.0.0.1' {
    return '127.0.0.1';
  }
  get socket(): string {
    return join(this.dir, 'mysqld.sock');
  }
  get pidFile(): string {
    return join(this.dir, 'mysqld.pid');
  }
  get dataDir(): string {
    return join(this.dir, 'data');
  }
  get errorLog(): string {
    return join(this.dir, 'error.log');
  }
  get configFile(): string {
    return join(this.dir, 'my.cnf');
  }

  spec(): MariadbInstanceSpec {
    return { name: this.name, dir: this.dir, port: this.port, serverId: this.serverId, settings: { ...this.settings }, ...(this.plugins.length > 0 ? { plugins: [...this.plugins] } : {}) };
  }

  /** The pid of the running server, or undefined when it is not running. */
  get pid(): number | undefined {
    let text: string;
    try {
      text = readFileSync(this.pidFile, 'utf8').trim();
    } catch {
      return undefined;
    }
    const pid = Number(text);
    if (!Number.isSafeInteger(pid) || pid <= 0 || !processRunning(pid)) return undefined;
    // Guard against pid reuse after a crash: the process must be a mariadbd using our config.
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (!cmdline.includes(this.configFile)) return undefined;
    } catch {
      // no /proc: trust the pid file
    }
    return pid;
  }

  isRunning(): boolean {
    return this.pid !== undefined;
  }

  isInitialized(): boolean {
    return existsSync(join(this.dataDir, 'mysql', 'global_priv.MAI')) || existsSync(join(this.dataDir, 'mysql', 'user.frm'));
  }

  status(): MariadbInstanceStatus {
    const pid = this.pid;
    return { name: this.name, host: '127.0.0.1', port: this.port, socket: this.socket, pid: pid ?? null, running: pid !== undefined };
  }

  /** my.cnf text: base settings, then the instance's own. */
  renderConfig(): string {
    const all: MysqldSettings = {
      ...(process.getuid?.() === 0 ? { user: userInfo().username } : {}),
      datadir: this.dataDir,
      socket: this.socket,
      'pid-file': this.pidFile,
      'log-error': this.errorLog,
      // Own tmpdir: concurrent servers (and bootstraps) must not share temporary files.
      tmpdir: join(this.dir, 'tmp'),
      port: this.port,
      server_id: this.serverId,
      ...BASE_SETTINGS,
      ...(this.plugins.includes('ha_rocksdb') ? ROCKSDB_SETTINGS : {}),
      ...this.settings,
    };
    const lines = ['# Written by shardkit (src/ops/mariadb/mariadb-instance.ts); edit instance.json, not this file.', '[mysqld]'];
    for (const p of this.plugins) lines.push(`plugin-load-add=${p}`);
    for (const [k, v] of Object.entries(all)) lines.push(v === true && (k.startsWith('skip-') || k === 'log-slave-updates') ? k : `${k}=${formatValue(v)}`);
    lines.push('', '[client]', `socket=${this.socket}`, '');
    return lines.join('\n');
  }

  /** Writes instance.json and my.cnf (init and start do it too); lets a caller record the instance before initialising it. */
  writeFiles(): void {
    mkdirSync(join(this.dir, 'tmp'), { recursive: true });
    const write = (file: string, text: string) => {
      writeFileSync(`${file}.tmp`, text);
      renameSync(`${file}.tmp`, file);
    };
    write(join(this.dir, 'instance.json'), `${JSON.stringify(this.spec(), null, 2)}\n`);
    write(this.configFile, this.renderConfig());
  }

  /**
   * Writes instance.json and my.cnf and, when the datadir is empty, creates it with
   * mariadb-install-db (root via unix_socket, no test database). Idempotent.
   */
  async init(): Promise<void> {
    const { installDb } = this.binaries();
    this.writeFiles();
    if (this.isInitialized()) return;
    const user = userInfo().username;
    const res = await new Promise<{ status: number | null; stdout: string; stderr: string; error?: Error }>((done) => {
      execFile(installDb, [
        `--defaults-file=${this.configFile}`,
        `--datadir=${this.dataDir}`,
        `--user=${user}`,
        '--auth-root-authentication-method=socket',
        `--auth-root-socket-user=${user}`,
        '--skip-test-db',
        '--skip-name-resolve',
      ], { encoding: 'utf8', timeout: 120_000 }, (error, stdout, stderr) => {
        done({ status: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr, ...(error ? { error } : {}) });
      });
    });
    if (res.status !== 0) {
      const out = `${res.stdout ?? ''}${res.stderr ?? ''}`.trim().split('\n').slice(-3).join(' | ');
      throw new ShardKitError('INTERNAL', `mariadb-install-db failed for ${this.name} (${this.dataDir}): ${out || res.error?.message || `exit ${res.status}`}`);
    }
  }

  /** Changes the port (only while stopped); used when the first start finds the port taken. */
  setPort(port: number): void {
    if (this.isRunning()) throw new ShardKitError('INVALID_ARGUMENT', `${this.name} is running on port ${this.port}; stop it before changing its port`);
    this.currentPort = port;
    this.writeFiles();
  }

  /**
   * Starts mariadbd in the background (it outlives this process) and waits until it accepts
   * connections. No-op when already running. A port already in use is ALREADY_EXISTS with
   * details.portInUse so a caller that picked the port may pick another.
   */
  async start(options: { timeoutMs?: number } = {}): Promise<void> {
    if (this.isRunning()) return;
    const { mariadbd } = this.binaries();
    this.writeFiles();
    if (!this.isInitialized()) await this.init();
    const logStart = existsSync(this.errorLog) ? readFileSync(this.errorLog).length : 0;
    const out = openSync(join(this.dir, 'mariadbd.out'), 'a');
    const child = spawn(mariadbd, [`--defaults-file=${this.configFile}`], { detached: true, stdio: ['ignore', out, out] });
    closeSync(out);
    let exited: number | null | undefined;
    child.on('exit', (code) => {
      exited = code;
    });
    child.on('error', () => {
      exited = -1;
    });
    child.unref();
    const deadline = Date.now() + (options.timeoutMs ?? 60_000);
    for (;;) {
      if (exited !== undefined) {
        const log = existsSync(this.errorLog) ? readFileSync(this.errorLog, 'utf8').slice(logStart) : '';
        if (/Address already in use|Bind on TCP\/IP port/i.test(log)) {
          throw new ShardKitError('ALREADY_EXISTS', `${this.name}: port ${this.port} on 127.0.0.1 is already in use`, { details: { portInUse: true, port: this.port } });
        }
        const errors = log.split('\n').filter((l) => l.includes('[ERROR]')).slice(-2).join(' | ');
        throw new ShardKitError('INTERNAL', `mariadbd ${this.name} exited (code ${exited}) during start: ${errors || `see ${this.errorLog}`}`);
      }
      if (await socketAnswers(this.socket)) {
        if (this.isRunning()) return;
      }
      if (Date.now() > deadline) {
        throw new ShardKitError('INTERNAL', `mariadbd ${this.name} did not become ready within ${options.timeoutMs ?? 60_000} ms (see ${this.errorLog})`);
      }
      await sleep(50);
    }
  }

  /** Clean shutdown (SIGTERM), SIGKILL after `timeoutMs`; resolves once the process is gone. */
  async stop(options: { timeoutMs?: number } = {}): Promise<void> {
    const pid = this.pid;
    if (pid === undefined) return;
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      return;
    }
    const deadline = Date.now() + (options.timeoutMs ?? 60_000);
    while (processRunning(pid)) {
      if (Date.now() > deadline) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
      await sleep(50);
    }
  }

  /** kill -9: what a crash looks like. Resolves once the process is gone. */
  async kill(): Promise<void> {
    const pid = this.pid;
    if (pid === undefined) return;
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      return;
    }
    while (processRunning(pid)) await sleep(20);
  }

  /** An admin connection over the socket (root via unix_socket auth, no password). Close it after use. */
  async connect(options: { database?: string; connectTimeoutMs?: number } = {}): Promise<mysql.Connection> {
    return mysql.createConnection({
      socketPath: this.socket,
      user: userInfo().username,
      connectTimeout: options.connectTimeoutMs ?? 5000,
      supportBigNumbers: true,
      bigNumberStrings: true,
      ...(options.database ? { database: options.database } : {}),
    });
  }

  /** Runs statements as admin on a short-lived connection; returns the rows of the last one. */
  async admin<T = mysql.RowDataPacket[]>(...statements: Array<string | { sql: string; values?: unknown[] }>): Promise<T> {
    return runStatements<T>(await this.connect(), statements);
  }
}

/** True when something accepts a connection on the unix socket and sends the server greeting. */
function socketAnswers(path: string): Promise<boolean> {
  return new Promise((resolveAnswer) => {
    if (!existsSync(path)) {
      resolveAnswer(false);
      return;
    }
    const sock = netConnect(path);
    const done = (ok: boolean) => {
      sock.destroy();
      resolveAnswer(ok);
    };
    sock.setTimeout(1000, () => done(false));
    sock.once('data', () => done(true));
    sock.once('error', () => done(false));
    sock.once('close', () => done(false));
  });
}

/** Runs statements in order on a short-lived admin connection, then closes it; the rows of the last. */
export async function runStatements<T>(conn: mysql.Connection, statements: Array<string | { sql: string; values?: unknown[] }>): Promise<T> {
  try {
    let last: unknown;
    for (const s of statements) {
      const [rows] = typeof s === 'string' ? await conn.query(s) : await conn.query(s.sql, s.values);
      last = rows;
    }
    return last as T;
  } finally {
    await conn.end().catch(() => conn.destroy());
  }
}
