import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { requireOptional } from '../../util/optional-dependency.js';
import { pickFreePort } from '../free-port.js';

/** Where Debian 12's `postgresql` package (PostgreSQL 15) puts the server binaries. */
export const DEFAULT_POSTGRES_BIN = '/usr/lib/postgresql/15/bin';

export interface PostgresInstanceOptions {
  /** Directory of initdb/postgres; default $SHARDKIT_POSTGRES_BIN or Debian's. */
  binDir?: string;
  /** Parent of the instance's temp directory (default the OS temp dir). */
  parentDir?: string;
  /** Databases created after the first start (e.g. the one the backend's config names). */
  databases?: string[];
  /** Extra `-c name=value` server settings. */
  settings?: Record<string, string | number>;
}

interface OsUser {
  uid: number;
  gid: number;
}

/** uid/gid of a system user, from /etc/passwd (Node has no getpwnam). */
function osUser(name: string): OsUser | undefined {
  for (const line of readFileSync('/etc/passwd', 'utf8').split('\n')) {
    const f = line.split(':');
    if (f[0] === name && f.length >= 4) return { uid: Number(f[2]), gid: Number(f[3]) };
  }
  return undefined;
}

/**
 * Settings for a throwaway test server: small memory, loopback only, no fsync. A commit is still
 * written to the WAL before it is acknowledged (synchronous_commit stays on), so a killed server
 * (stop('immediate')) loses nothing; only a crash of the machine could.
 */
const BASE_SETTINGS: Record<string, string | number> = {
  listen_addresses: '127.0.0.1',
  fsync: 'off',
  full_page_writes: 'off',
  shared_buffers: '16MB',
  max_connections: 100,
  log_min_messages: 'warning',
  logging_collector: 'off',
};

/**
 * One local PostgreSQL server for tests and experiments: `initdb` into a fresh temp directory
 * (trust authentication, superuser `postgres`, UTF-8), `postgres` on 127.0.0.1 at a free port
 * with its unix socket in the same directory. PostgreSQL refuses to run as root, so when we are
 * root the directory is handed to the `postgres` system user (created by the Debian package) and
 * both programs run as that user. stop() keeps the data for a later start(); destroy() removes it.
 */
export class PostgresInstance {
  readonly dir: string;
  readonly port: number;
  private readonly binDir: string;
  private readonly settings: Record<string, string | number>;
  private readonly runAs: OsUser | undefined;
  private child: ChildProcess | undefined;
  private exited: Promise<void> | undefined;
  private logTail = '';

  private constructor(dir: string, port: number, options: PostgresInstanceOptions, runAs: OsUser | undefined) {
    this.dir = dir;
    this.port = port;
    this.binDir = options.binDir ?? process.env.SHARDKIT_POSTGRES_BIN ?? DEFAULT_POSTGRES_BIN;
    this.settings = { ...BASE_SETTINGS, ...(options.settings ?? {}) };
    this.runAs = runAs;
  }

  /** A new, initialised and started server; `databases` exist when this resolves. */
  static async start(options: PostgresInstanceOptions = {}): Promise<PostgresInstance> {
    let runAs: OsUser | undefined;
    if (process.getuid?.() === 0) {
      runAs = osUser('postgres');
      if (!runAs) throw new Error('running as root and there is no "postgres" system user to run PostgreSQL as (apt-get install postgresql creates it)');
    }
    const dir = mkdtempSync(join(options.parentDir ?? tmpdir(), 'shardkit-pg-'));
    if (runAs) chownSync(dir, runAs.uid, runAs.gid);
    const instance = new PostgresInstance(dir, await pickFreePort(), options, runAs);
    try {
      await instance.initdb();
      await instance.startServer();
      for (const db of options.databases ?? []) await instance.sql('postgres', `CREATE DATABASE ${pgDriver().escapeIdentifier(db)}`);
      return instance;
    } catch (err) {
      await instance.destroy();
      throw err;
    }
  }

  get host(): '127.0.0.1' {
    return '127.0.0.1';
  }

  get dataDir(): string {
    return join(this.dir, 'data');
  }

  get running(): boolean {
    return this.child !== undefined;
  }

  private bin(name: string): string {
    return join(this.binDir, name);
  }

  private ids(): { uid?: number; gid?: number } {
    return this.runAs ? { uid: this.runAs.uid, gid: this.runAs.gid } : {};
  }

  private initdb(): Promise<void> {
    const args = ['-D', this.dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C', '--no-sync'];
    return new Promise((resolve, reject) => {
      execFile(this.bin('initdb'), args, { ...this.ids(), cwd: this.dir, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C' } }, (err, _stdout, stderr) => {
        if (err) reject(new Error(`initdb failed: ${stderr || err.message}`));
        else resolve();
      });
    });
  }

  /** Starts the server on the same port and data (after stop()) and waits until it accepts queries. */
  async startServer(): Promise<void> {
    if (this.child) return;
    const args = ['-D', this.dataDir, '-p', String(this.port), '-k', this.dir];
    for (const [k, v] of Object.entries(this.settings)) args.push('-c', `${k}=${v}`);
    const child = spawn(this.bin('postgres'), args, { ...this.ids(), cwd: this.dir, stdio: ['ignore', 'ignore', 'pipe'], env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C' } });
    this.logTail = '';
    child.stderr!.on('data', (chunk: Buffer) => {
      this.logTail = (this.logTail + chunk.toString('utf8')).slice(-4000);
    });
    this.child = child;
    this.exited = new Promise((resolve) => child.once('exit', () => {
      if (this.child === child) this.child = undefined;
      resolve();
    }));
    for (let attempt = 0; attempt < 300; attempt++) {
      if (!this.child) throw new Error(`postgres exited during startup: ${this.logTail.trim()}`);
      try {
        // Our own server, not merely one on our port: another one that took the port first also
        // answers over TCP while ours fails to bind it and exits.
        const [row] = await this.sql<{ dir: string }>('postgres', "SELECT current_setting('data_directory') AS dir");
        if (row?.dir === this.dataDir) return;
      } catch {
        // not up yet
      }
      await sleep(100);
    }
    await this.stop();
    throw new Error(`postgres did not accept connections within 30 s: ${this.logTail.trim()}`);
  }

  /**
   * Stops the server: "fast" (SIGINT: sessions are ended with admin_shutdown, the clean way),
   * "immediate" (SIGQUIT: no checkpoint, recovery at the next start, like a crash).
   */
  async stop(mode: 'fast' | 'immediate' = 'fast'): Promise<void> {
    const child = this.child;
    if (!child) return;
    child.kill(mode === 'fast' ? 'SIGINT' : 'SIGQUIT');
    await this.exited;
  }

  /** Stops the server and removes its directory. */
  async destroy(): Promise<void> {
    await this.stop('immediate');
    if (existsSync(this.dir)) rmSync(this.dir, { recursive: true, force: true });
  }

  /** One statement as the superuser, over TCP (admin work in tests: CREATE DATABASE, inspection). */
  async sql<T extends pg.QueryResultRow = pg.QueryResultRow>(database: string, text: string, values?: unknown[]): Promise<T[]> {
    return superuserQuery<T>({ host: this.host, port: this.port, database, connectTimeoutMs: 2000 }, text, values);
  }
}

/** One statement as the superuser `postgres` on a short-lived connection (admin work: CREATE DATABASE, inspection). */
export async function superuserQuery<T extends pg.QueryResultRow = pg.QueryResultRow>(at: { host: string; port: number; database: string; connectTimeoutMs: number; user?: string; password?: string; queryTimeoutMs?: number }, text: string, values?: unknown[]): Promise<T[]> {
  const client = new (pgDriver().Client)({
    host: at.host, port: at.port, user: at.user ?? 'postgres', database: at.database, connectionTimeoutMillis: at.connectTimeoutMs,
    ...(at.password !== undefined ? { password: at.password } : {}), ...(at.queryTimeoutMs !== undefined ? { query_timeout: at.queryTimeoutMs } : {}),
  });
  client.on('error', () => undefined);
  await client.connect();
  try {
    return (await client.query<T>(text, values)).rows;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** pg, loaded on first use: a MariaDB dev cluster's commands import this module and must not need it. */
function pgDriver(): typeof pg {
  return requireOptional<typeof pg>('pg', 'a PostgreSQL dev cluster');
}
