import type mysql from 'mysql2/promise';
import { requireOptional } from '../util/optional-dependency.js';
import { ShardKitError } from '../errors.js';
import { parseId } from '../ids/codec.js';
import { withDeadline } from './deadline.js';
import { LatencyHistogram } from '../util/latency-histogram.js';
import { residueOf, type ResolvedTicketServer } from './tickets-config.js';

export interface TicketServerOptions {
  /** The tickets database; left out by `tickets init`, which creates it. */
  database?: string;
  increment: number;
  poolSize: number;
  connectTimeoutMs: number;
  queryTimeoutMs: number;
}

/** A block reserved in one round trip: `count` IDs `first, first + step, …, last`, all this server's residue. */
export interface ReservedBlock {
  server: string;
  first: bigint;
  step: bigint;
  count: number;
  last: bigint;
}

/** Most REPLACE/SELECT pairs sent in one multi-statement round trip by `classic()`. */
export const CLASSIC_PAIRS_PER_ROUND_TRIP = 200;

const quote = (identifier: string) => `\`${identifier}\``;

/**
 * One ticket server as seen by one client: a small mysql2 pool, every call bounded by the connect
 * and query timeouts (a stuck connection is destroyed, never reused), and every ID checked against
 * the server's residue before anyone sees it, so a misconfigured server cannot issue a duplicate.
 */
export class TicketServer {
  readonly name: string;
  readonly offset: number;
  readonly residue: bigint;
  private readonly step: bigint;
  private pool: mysql.Pool | undefined;
  private closed = false;
  /** Round trips (connection wait included), and those that failed: for /metrics. */
  readonly latency = new LatencyHistogram();
  errors = 0;

  constructor(readonly spec: ResolvedTicketServer, private readonly options: TicketServerOptions) {
    this.name = spec.name;
    this.offset = spec.offset;
    this.step = BigInt(options.increment);
    this.residue = residueOf(spec.offset, options.increment);
  }

  /** Where it listens, for messages: the socket if configured, else host:port. */
  get address(): string {
    return this.spec.socket ?? `${this.spec.host}:${this.spec.port}`;
  }

  private getPool(): mysql.Pool {
    if (this.closed) throw new ShardKitError('CLOSED', 'the ticket client is closed');
    if (!this.pool) {
      const s = this.spec;
      this.pool = requireOptional<typeof mysql>('mysql2/promise', 'the ticket servers').createPool({
        ...(s.socket ? { socketPath: s.socket } : { host: s.host, port: s.port }),
        user: s.user,
        ...(s.password !== undefined ? { password: s.password } : {}),
        ...(this.options.database !== undefined ? { database: this.options.database } : {}),
        connectionLimit: this.options.poolSize,
        maxIdle: this.options.poolSize,
        connectTimeout: this.options.connectTimeoutMs,
        // Both statements of a ticket go in one round trip, on one connection (LAST_INSERT_ID is per connection).
        multipleStatements: true,
        supportBigNumbers: true,
        bigNumberStrings: true,
        enableKeepAlive: true,
      });
      // A pooled connection that dies while idle emits 'error'; the pool drops it, we only must not crash.
      this.pool.pool.on('connection', (conn) => conn.on('error', () => {}));
    }
    return this.pool;
  }

  /** One multi-statement round trip on one pooled connection, bounded by both timeouts. */
  async query(sql: string, values: unknown[] = []): Promise<unknown[]> {
    const started = performance.now();
    try {
      return await this.roundTrip(sql, values);
    } catch (err) {
      this.errors++;
      throw err;
    } finally {
      this.latency.observe((performance.now() - started) / 1000);
    }
  }

  private async roundTrip(sql: string, values: unknown[]): Promise<unknown[]> {
    const pool = this.getPool();
    const conn = await withDeadline(pool.getConnection(), this.options.connectTimeoutMs, `connecting to ticket server ${this.name} (${this.address})`, {
      onLate: (c) => c.release(),
    });
    let ok = false;
    try {
      const [result] = await withDeadline(conn.query({ sql, values }), this.options.queryTimeoutMs, `ticket server ${this.name} query`, {
        onTimeout: () => conn.destroy(),
      });
      ok = true;
      return result as unknown as unknown[];
    } finally {
      // After any failure the connection's state is unknown: drop it rather than hand it to the next caller.
      if (ok) conn.release();
      else conn.destroy();
    }
  }

  private check(raw: unknown, what: string): bigint {
    const id = parseId(String(raw), `${what} from ${this.name}`);
    if (id === 0n || id % this.step !== this.residue) {
      throw new ShardKitError('INTERNAL', `ticket server ${this.name} returned ${id}, which is not ≡ ${this.residue} (mod ${this.step}): check its auto_increment_increment/auto_increment_offset`);
    }
    return id;
  }

  /**
   * Classic Flickr tickets: `count` times `REPLACE INTO t (stub) VALUES ('a'); SELECT LAST_INSERT_ID()`,
   * at most CLASSIC_PAIRS_PER_ROUND_TRIP pairs per call so each round trip stays small.
   */
  async classic(table: string, count = 1): Promise<bigint[]> {
    if (!Number.isInteger(count) || count < 1 || count > CLASSIC_PAIRS_PER_ROUND_TRIP) {
      throw new ShardKitError('INVALID_ARGUMENT', `classic count must be 1..${CLASSIC_PAIRS_PER_ROUND_TRIP}`);
    }
    const pair = `REPLACE INTO ${quote(table)} (stub) VALUES ('a'); SELECT LAST_INSERT_ID() AS id;`;
    const results = await this.query(pair.repeat(count));
    const ids: bigint[] = [];
    for (let i = 1; i < results.length; i += 2) {
      const rows = results[i] as Array<{ id: unknown }>;
      ids.push(this.check(rows[0]?.id, 'ticket'));
    }
    if (ids.length !== count) throw new ShardKitError('INTERNAL', `ticket server ${this.name} answered ${ids.length} tickets for ${count}`);
    return ids;
  }

  /**
   * Segment mode: reserves `count` IDs of this server's residue in one round trip. The single
   * stub row always holds the largest ID this server has issued for the table (REPLACE keeps only
   * the newest row), so moving it up by count × increment claims exactly the `count` residues
   * above it. On MyISAM the UPDATE runs under the table lock and raises AUTO_INCREMENT past the
   * new value, so classic REPLACEs from other clients continue above the block.
   */
  async reserve(table: string, count: number): Promise<ReservedBlock> {
    if (!Number.isSafeInteger(count) || count < 1) throw new ShardKitError('INVALID_ARGUMENT', 'block size must be a positive integer');
    const t = quote(table);
    // INSERT IGNORE recreates a missing stub row (it then only burns one fresh ID); otherwise it changes nothing.
    const sql = `INSERT IGNORE INTO ${t} (stub) VALUES ('a'); UPDATE ${t} SET id = LAST_INSERT_ID(id + ?) WHERE stub = 'a'; SELECT LAST_INSERT_ID() AS id;`;
    const span = BigInt(count) * this.step;
    const results = await this.query(sql, [span.toString()]);
    const update = results[1] as { affectedRows?: number };
    if (update?.affectedRows !== 1) throw new ShardKitError('INTERNAL', `ticket server ${this.name}: the stub row of ${table} was not updated`);
    const rows = results[2] as Array<{ id: unknown }>;
    const last = this.check(rows[0]?.id, 'block end');
    return { server: this.name, first: last - span + this.step, step: this.step, count, last };
  }

  /** Server variables that decide the residue; `tickets init` refuses a server whose values differ from the config. */
  async variables(): Promise<{ increment: number; offset: number; recoverOptions: string }> {
    const results = await this.query('SELECT @@auto_increment_increment AS inc, @@auto_increment_offset AS off, @@myisam_recover_options AS rec;');
    const row = (results as Array<{ inc: unknown; off: unknown; rec: unknown }>)[0]!;
    return { increment: Number(row.inc), offset: Number(row.off), recoverOptions: String(row.rec) };
  }

  async close(): Promise<void> {
    this.closed = true;
    const pool = this.pool;
    this.pool = undefined;
    if (pool) await pool.end().catch(() => undefined);
  }
}
