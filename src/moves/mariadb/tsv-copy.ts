import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import type { Socket } from 'node:net';
import { PassThrough } from 'node:stream';
import type { ResultSetHeader } from 'mysql2/promise';
import { openedUnderLock, READ_LOCK_MAX_MS, takeReadLock } from './read-lock.js';
import { ShardKitError } from '../../errors.js';
import type { TableProgress } from '../move-engine.js';
import { BYTES_EVERY_MS, dumpCopy, type DumpAdmin, type DumpCopyOptions } from './dump-copy.js';
import type { Conn } from './names.js';
import { parallelDumpCopy } from './parallel-dump-copy.js';
import { TsvSplitter } from './tsv-split.js';
import { tsvTables, type TsvTable } from './tsv-tables.js';

/** The binlog position of this session's consistent snapshot (MariaDB's binlog_snapshot_* status). */
const SNAPSHOT_STATUS = (what: 'FILE' | 'POSITION') => `(SELECT VARIABLE_VALUE FROM information_schema.SESSION_STATUS WHERE VARIABLE_NAME = 'BINLOG_SNAPSHOT_${what}')`;

/** Bytes a loader may have queued (its table's input plus its socket) before the source's output is paused. */
const QUEUED_MAX = 8 << 20;

/** What one table's copy saw: its rows and bytes off the source, and each target's LOAD DATA answer. */
interface Job {
  table: TsvTable;
  inputs: PassThrough[];
  rows: number;
  bytes: number;
}

/**
 * The move's copy (#29 item 2): the schema by `mariadb-dump --no-data` into every target, the rows
 * as tab-separated text. `streams` batch-client sessions on `from` open their snapshots under one
 * FLUSH TABLES WITH READ LOCK (the source's slave, so the master's writes never wait; one session
 * takes none) and read their snapshot's GTID position, which must be the same for all and is the
 * copy's; each then selects its databases' tables in turn, and the mover streams every
 * table's rows into one LOAD DATA LOCAL per target (binlog off). No SQL is written or parsed per
 * row: against `mariadb-dump | mariadb`, whose INSERT text both client and server parse, this is
 * what makes the copy faster than the stock pipe. Rows are counted off the stream and each
 * target's LOAD DATA must take exactly those, with no warning, or the copy fails.
 *
 * Tables the text form cannot carry (tsv-tables.ts: triggers, BIT, spatial types, sequences)
 * send the whole copy the mariadb-dump way (parallel-dump-copy.ts).
 */
export async function tsvCopy(admin: DumpAdmin, from: string, to: readonly string[], databases: string[], streams: number, options: DumpCopyOptions = {}): Promise<string> {
  if (databases.length === 0) return '';
  const probe = await admin.connect(from);
  let tables: Awaited<ReturnType<typeof tsvTables>>;
  try {
    tables = await tsvTables(probe, databases, options.ignoreTables ?? []);
  } finally {
    await probe.end().catch(() => probe.destroy());
  }
  if (!Array.isArray(tables)) return parallelDumpCopy(admin, from, to, databases, streams, options);
  return new TsvCopy(admin, from, [...to], databases, tables, Math.max(1, Math.min(streams, new Set(tables.map((t) => t.database)).size)), options).run();
}

class TsvCopy {
  private readonly boundary = `~shardkit-copy-${randomBytes(16).toString('hex')}~`;
  private readonly sources: ChildProcess[] = [];
  private readonly loaders: Conn[] = [];
  private readonly errors: string[] = [];
  private failed!: (e: Error) => void;
  /** Rejects at the first failure: every wait races it, so nothing waits on a part that died. */
  private readonly failure = new Promise<never>((_, reject) => (this.failed = reject));
  private readonly jobs: Job[][];
  private bytes = 0;
  private rows = 0;
  private toldAt = 0;
  /** Per stream: the table whose rows are passed on to the loaders now, and the one being read (ahead of it by a throttled piece). */
  private readonly current: Array<Job | undefined>;
  private readonly reading: Array<Job | undefined>;

  constructor(private readonly admin: DumpAdmin, private readonly from: string, private readonly to: string[], private readonly databases: string[], tables: TsvTable[], streams: number, private readonly options: DumpCopyOptions) {
    this.failure.catch(() => undefined);
    // Databases dealt out round-robin (a shard's tables in one stream, as the dump copy does).
    const dbs = [...new Set(tables.map((t) => t.database))];
    this.jobs = Array.from({ length: streams }, (_, i) => tables.filter((t) => dbs.indexOf(t.database) % streams === i).map((table) => ({ table, inputs: to.map(() => new PassThrough({ highWaterMark: 1 << 20 })), rows: 0, bytes: 0 })));
    this.current = this.jobs.map(() => undefined);
    this.reading = this.jobs.map(() => undefined);
  }

  async run(): Promise<string> {
    // One stream needs no lock: its snapshot's binlog position is its own (as mariadb-dump
    // --single-transaction --master-data reads it). Several open theirs under one.
    const lock = this.jobs.length > 1 ? await this.admin.connect(this.from) : undefined;
    let locked = false;
    try {
      const started = this.jobs.map((jobs, i) => this.startSource(i, jobs));
      const opened = started.map((x) => x.opened);
      // Every session connected and set up before the lock: under it (the slave's SQL thread
      // waits, and each millisecond is source lag) only the snapshots open. A session that had not
      // started yet made the lock wait for its process and connection (lag 1,818 transactions).
      await this.race(Promise.all(started.map((x) => x.ready)));
      const lockMs = this.options.readLockMaxMs ?? READ_LOCK_MAX_MS;
      if (lock !== undefined) {
        await this.race(takeReadLock(lock, lockMs));
        locked = true;
      }
      for (const p of this.sources) p.stdin!.write(`START TRANSACTION WITH CONSISTENT SNAPSHOT;\nSELECT CONCAT('${this.boundary}open ', IFNULL(BINLOG_GTID_POS(${SNAPSHOT_STATUS('FILE')}, ${SNAPSHOT_STATUS('POSITION')}), '-'));\n`);
      const positions = await this.race(locked ? openedUnderLock(this.from, Promise.all(opened), lockMs) : Promise.all(opened));
      if (locked) await lock?.query('UNLOCK TABLES');
      locked = false;
      this.options.onSnapshot?.();
      if (positions.includes('-')) throw new ShardKitError('INTERNAL', `${this.from} gave no GTID position for its snapshot (is its binlog on?)`);
      if (new Set(positions).size > 1) throw new ShardKitError('INTERNAL', `the ${positions.length} parallel reads of ${this.from} saw different GTID positions (${positions.join(' / ')}): not one consistent point`);
      const position = positions[0]!;
      // The schema, one dump per stream once the lock is gone (nothing forked under it; 320 small
      // tables' DDL is most of their copy); a stream's loads wait for its own databases' tables.
      const schemas = this.schemaGroups().map((dbs) => {
        if (dbs.length === 0) return Promise.resolve('');
        const done = dumpCopy(this.admin, this.from, this.to, dbs, { schemaOnly: true, ...(this.options.ignoreTables !== undefined ? { ignoreTables: this.options.ignoreTables } : {}) });
        done.catch((e: Error) => this.fail(`schema: ${e.message}`));
        return done;
      });
      for (const [i, p] of this.sources.entries()) {
        p.stdin!.end(`${this.jobs[i]!.map((j, k) => `SELECT '${this.boundary}${k}';\n${j.table.select};\n`).join('')}COMMIT;\n`);
      }
      const loads = await this.openLoaders();
      await this.race(Promise.all([...schemas, ...started.map((x) => x.done), ...loads.map((conn, n) => this.load(conn, n, schemas[Math.floor(n / this.to.length)]!))]));
      this.check();
      this.options.onBytes?.(this.bytes, this.rows, []);
      return position;
    } catch (e) {
      this.failed(e as Error);
      this.stop();
      const why = this.errors.length > 0 ? this.errors.join('; ') : (e as Error).message;
      throw e instanceof ShardKitError && this.errors.length === 0 ? e : new ShardKitError('INTERNAL', `copying ${this.from} to ${this.to.join(' and ')} failed: ${why}`);
    } finally {
      if (locked) await lock?.query('UNLOCK TABLES').catch(() => undefined);
      await lock?.end().catch(() => lock.destroy());
      for (const c of this.loaders) await c.end().catch(() => c.destroy());
    }
  }

  /** Each stream's databases, as the jobs deal them; databases with no table to copy (views only, say) go with the first. */
  private schemaGroups(): string[][] {
    const groups = this.jobs.map((jobs) => [...new Set(jobs.map((j) => j.table.database))]);
    const dealt = new Set(groups.flat());
    groups[0]!.push(...this.databases.filter((d) => !dealt.has(d)));
    return groups;
  }

  private race<T>(p: Promise<T>): Promise<T> {
    return Promise.race([p, this.failure]);
  }

  private fail(why: string): void {
    this.errors.push(why);
    this.failed(new Error(why));
    this.stop();
  }

  private stop(): void {
    for (const p of this.sources) if (p.exitCode === null) p.kill('SIGKILL');
    for (const c of this.loaders) c.destroy();
    for (const jobs of this.jobs) for (const j of jobs) for (const input of j.inputs) input.destroy();
  }

  /** Source session `i`: a batch client reading its statements from stdin, read at once; `opened` once its snapshot is open, `done` at its end. */
  private startSource(i: number, jobs: Job[]): { ready: Promise<void>; opened: Promise<string>; done: Promise<void> } {
    const p = spawn('mariadb', [...this.admin.clientArgs(this.from), '--batch', '--skip-column-names', '--quick', '--unbuffered', '--default-character-set=binary'], { stdio: ['pipe', 'pipe', 'pipe'] });
    this.sources.push(p);
    p.stdin!.on('error', () => undefined);
    // A throttled copy pauses the read for as long as the throttle holds: the server must not time out the write meanwhile.
    p.stdin!.write(`SET SESSION net_write_timeout = 86400, time_zone = '+00:00';\nSET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ;\nSELECT '${this.boundary}ready';\n`);
    let stderr = '';
    p.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-2000)));
    p.on('error', (e) => this.fail(`mariadb (${this.from}): ${e.message}`));
    p.on('close', (code, signal) => {
      if (code !== 0) this.fail(`mariadb (${this.from}) exited ${code ?? signal}: ${stderr.trim().split('\n').slice(-2).join(' | ')}`);
    });
    let splitter!: TsvSplitter;
    const held: Array<() => void> = [];
    let heldRows = 0;
    let ready!: () => void;
    const isReady = new Promise<void>((resolve) => (ready = resolve));
    const opened = new Promise<string>((resolve) => {
      splitter = new TsvSplitter(Buffer.from(this.boundary, 'latin1'), {
        // Counted as read (progress says what the source gave); passed on to the loaders once the throttle lets the piece through.
        marker: (tag) => {
          if (tag === 'ready') return ready();
          if (tag.startsWith('open ')) return resolve(tag.slice('open '.length));
          const job = jobs[Number(tag)]!;
          this.reading[i] = job;
          this.tell(true);
          held.push(() => {
            this.endTable(i);
            this.current[i] = job;
          });
        },
        data: (bytes, rows) => {
          const job = this.reading[i];
          if (job === undefined) return; // nothing but the snapshot's statements come before the first table
          job.rows += rows;
          job.bytes += bytes.length;
          this.rows += rows;
          this.bytes += bytes.length;
          heldRows += rows;
          held.push(() => {
            for (const input of job.inputs) input.write(bytes);
          });
        },
      });
    });
    const pass = async (bytes: number) => {
      const rows = heldRows;
      heldRows = 0;
      if (this.options.throttle !== undefined && (rows > 0 || bytes > 0)) await this.race(this.options.throttle(rows, bytes));
      for (const op of held.splice(0)) op();
    };
    const done = this.drained(p, i, splitter, pass);
    done.catch(() => undefined); // awaited once the snapshots are open; a failure before that is the copy's, not unhandled
    return { ready: isReady, opened, done };
  }

  private endTable(i: number): void {
    const job = this.current[i];
    if (job !== undefined) for (const input of job.inputs) input.end();
    this.current[i] = undefined;
  }

  /** Reads source `i` to its end, piece by piece: each piece waits for the throttle (`pass`), the next for loaders that are behind. */
  private async drained(p: ChildProcess, i: number, splitter: TsvSplitter, pass: (bytes: number) => Promise<void>): Promise<void> {
    const out = p.stdout!;
    for await (const piece of out as AsyncIterable<Buffer>) {
      splitter.feed(piece);
      this.tell(false);
      await pass(piece.length);
      await this.race(this.caughtUp(i));
    }
    splitter.end();
    await pass(0);
    this.endTable(i);
    this.reading[i] = undefined;
    if (p.exitCode === null) await this.race(once(p, 'close'));
  }

  /** Resolves once no loader of stream `i` has more than QUEUED_MAX waiting (its table's input, its socket). */
  private async caughtUp(i: number): Promise<void> {
    const job = this.current[i];
    if (job === undefined) return;
    for (const [t, input] of job.inputs.entries()) {
      if (input.writableLength > QUEUED_MAX) await once(input, 'drain');
      const socket = this.socketOf(i, t);
      if (socket !== undefined && socket.writableLength > QUEUED_MAX) await once(socket, 'drain');
    }
  }

  private socketOf(i: number, t: number): Socket | undefined {
    const conn = this.loaders[i * this.to.length + t] as unknown as { connection?: { stream?: Socket } } | undefined;
    return conn?.connection?.stream;
  }

  /** One loader connection per stream and target: binlog off, UTC, the dump's session settings. */
  private async openLoaders(): Promise<Conn[]> {
    for (let i = 0; i < this.jobs.length; i++) {
      for (const host of this.to) {
        const c = await this.race(this.admin.connect(host));
        this.loaders.push(c);
        // net_read_timeout: a LOAD DATA waits for its rows while the throttle holds them.
        await this.race(c.query("SET SESSION sql_log_bin = 0, time_zone = '+00:00', foreign_key_checks = 0, unique_checks = 0, sql_mode = 'NO_AUTO_VALUE_ON_ZERO', net_read_timeout = 86400"));
      }
    }
    return this.loaders;
  }

  /** Loader `n` (stream n / targets, target n % targets): its stream's tables in order, each one LOAD DATA fed from the table's input. */
  private async load(conn: Conn, n: number, schema: Promise<string>): Promise<void> {
    const i = Math.floor(n / this.to.length);
    const t = n % this.to.length;
    await schema;
    for (const job of this.jobs[i]!) {
      const input = job.inputs[t]!;
      // A table the source has already shown empty needs no LOAD DATA (most of 320 small tables).
      if (input.writableEnded && job.rows === 0) continue;
      const [res] = await conn.query<ResultSetHeader>({ sql: job.table.load, infileStreamFactory: () => input });
      const rows = job.rows;
      if (res.affectedRows !== rows || res.warningStatus !== 0) {
        const [warnings] = await conn.query('SHOW WARNINGS LIMIT 3').catch(() => [[]]);
        throw new ShardKitError('INTERNAL', `LOAD DATA of ${job.table.name} into ${this.to[t]} took ${res.affectedRows} of ${rows} rows with ${res.warningStatus} warnings${(warnings as Array<{ Message: string }>).map((w) => `: ${w.Message}`).join('')}`);
      }
    }
  }

  /** Every table ended on every source; a table a source never reached would have no rows counted. */
  private check(): void {
    for (const jobs of this.jobs) for (const j of jobs) if (j.inputs.some((x) => !x.writableEnded)) throw new ShardKitError('INTERNAL', `the source's output ended before ${j.table.name}`);
  }

  private tell(force: boolean): void {
    // Nothing before the first byte (tables that start empty): each report carries a copy that moved.
    if (this.options.onBytes === undefined || this.bytes === 0 || (!force && Date.now() - this.toldAt < BYTES_EVERY_MS)) return;
    this.toldAt = Date.now();
    const tables: TableProgress[] = [];
    for (const j of this.reading) if (j !== undefined) tables.push({ table: j.table.name, rowsCopied: j.rows, bytesCopied: j.bytes });
    this.options.onBytes(this.bytes, this.rows, tables);
  }
}
