import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { ShardKitError } from '../../errors.js';
import type { SchemaDef } from '../../storage/shard-backend.js';
import { shardDatabaseName } from '../../storage/shard-names.js';
import type { MoveRecord } from '../../topology/shard-map.js';
import { hostAddress, moveShards, refuseFenceClash } from '../move-shared.js';
import { timedStep, type OnStep } from '../step-timer.js';
import type { CopyWait } from '../copy-throttle.js';
import type { ChunkedTable } from './chunk-settle.js';
import type { Aggregate } from './postgres-verify.js';

/** One server as declared in config `hosts` (the fields the engine uses). */
export interface PostgresMoveHost {
  host?: string;
  port?: number;
  socket?: string;
  user?: string;
  password?: string;
}

export interface PostgresMoveEngineOptions {
  hosts: Record<string, PostgresMoveHost>;
  user: string;
  password?: string;
  /** The database holding every shard schema on each server (config storage.database). */
  database: string;
  /** The config's schema: the target's tables are created from it, as `shardkit init` does. */
  schema: SchemaDef;
  /** How long the fence waits for transactions in flight on the moving tables (lock_timeout). Default 10 s. */
  lockTimeoutMs?: number;
  /** The initial copy is given up when its source or target stays unreachable (or no table finishes copying) for this long. Default 5 min. */
  copyStallMs?: number;
  /** Tables copied at once by the initial copy (one source and one target connection each). Default 4. */
  copyStreams?: number;
  /** Bytes per second the initial copy may read from the source at most, all streams together (`shards move --max-rate 20MB/s`); default: no limit. */
  maxBytesRate?: number;
  /** The initial copy waits while the source's standby has replayed more than this many bytes of WAL less than its primary wrote (default 64 MiB; `shards move --max-source-lag`). */
  maxSourceStandbyLagBytes?: number;
  /** Told each time the initial copy waits (its rate, or the source's standby lag). */
  onCopyWait?: (wait: CopyWait) => void;
  /** How long catchUp waits for the target to apply what the source committed before the fence. Default 60 s. */
  catchUpTimeoutMs?: number;
  /**
   * How long creating the replication slot may wait for transactions open on the source when the
   * copy starts (a logical slot needs a consistent starting point). Default 60 s; then the move
   * aborts, naming the sessions it waited for.
   */
  slotWaitMs?: number;
  /** Told how long each step of fence, catch-up and verify took (bench/moves-postgres.bench.ts prints them). */
  onStep?: OnStep;
}

/**
 * The lag limit callers give the runner (maxLag): the freeze starts when the move's slot has
 * confirmed all but this much of the source's WAL. What is left is applied under the freeze,
 * before the catch-up's marker arrives; WAL of other shards counts too, so the limit is not 0.
 */
export const POSTGRES_MOVE_MAX_LAG_BYTES = 4 * 1024 * 1024;

/** Schema of the per-move marker tables, on the source and the target. */
export const MARKER_SCHEMA = 'shardkit_moves';

/**
 * The statements that make move `moveId`'s marker table on a host. On a target, the marker says the
 * tables of the moving shards are the move's (undo drops them only then): a restore-in load runs it
 * in its own transaction (src/ops/backup/restore-aside-postgres.ts).
 */
export const markerSql = (moveId: string): string => `CREATE SCHEMA IF NOT EXISTS ${qi(MARKER_SCHEMA)};\nCREATE TABLE IF NOT EXISTS ${qi(MARKER_SCHEMA)}.${qi(replicationName(moveId))} (id int PRIMARY KEY, n bigint NOT NULL)`;

export const qi = (s: string): string => pg.escapeIdentifier(s);
export const ql = (s: string): string => pg.escapeLiteral(s);
export const movedSchema = (shard: number): string => `${shardDatabaseName(shard)}_moved`;

/**
 * Names of a move's publication, subscription and replication slot (all the same), and its
 * marker table. Move ids are up to 64 of [a-z0-9-]; PostgreSQL names stop at 63 bytes and slot
 * names take [a-z0-9_] only, so the name is a digest of the id.
 */
export function replicationName(moveId: string): string {
  return `shardkit_move_${createHash('sha1').update(moveId).digest('hex').slice(0, 20)}`;
}

/** The application_name of a move's copy sessions on the target: what an abort ends. */
export function copySessionName(moveId: string): string {
  return `shardkit_copy_${createHash('sha1').update(moveId).digest('hex').slice(0, 20)}`;
}

export type Client = pg.Client;

/** One shard in a verify: where its tables are on the source and which exist on each side. */
export interface VerifyPlan {
  s: number;
  srcNs: string;
  srcTables: string[];
  dstTables: string[];
  tables: string[];
}

/** Rounds of verifyBeforeFreeze for tables written meanwhile; what is still being written after them is compared under the freeze. */
export const PRE_FREEZE_ROUNDS = 6;

/**
 * What the PostgreSQL move engine's parts share: connections per host (pooled while a move runs),
 * the per-move state kept between phases, the catalogue reads, the marker, the fence plan and the
 * wait for the target to apply the source's marker. verify-engine.ts adds the comparisons,
 * postgres-move-engine.ts the phases.
 */
export class PostgresMoveBase {
  readonly kind = 'postgres';
  readonly droppedUnit = 'fenced schema(s)';

  protected readonly options: PostgresMoveEngineOptions;

  protected readonly tables: string[];

  constructor(options: PostgresMoveEngineOptions) {
    this.options = options;
    this.tables = [...options.schema.types.map((t) => t.table), ...options.schema.mappings.map((m) => m.table)];
    if (this.tables.length === 0) throw new ShardKitError('INVALID_CONFIG', 'the schema has no object tables to move');
  }

  /** Runs one step of the freeze path, telling onStep how long it took. */
  protected step<T>(name: string, fn: () => Promise<T>): Promise<T> {
    return timedStep(this.options.onStep, name, fn);
  }

  protected address(host: string): PostgresMoveHost & { user: string } {
    return hostAddress(this.options.hosts, host, this.options);
  }

  /** `replication`: a walsender connection (the copy creates its slot there, with an exported snapshot). */
  protected async connect(host: string, replication = false): Promise<Client> {
    const a = this.address(host);
    const c = new pg.Client({
      ...(replication ? { replication: 'database' } : {}),
      host: a.socket ?? a.host ?? '127.0.0.1', port: a.port ?? 5432, user: a.user,
      ...(a.password !== undefined ? { password: a.password } : {}),
      database: this.options.database, connectionTimeoutMillis: 5000,
    });
    // A dead server must fail this move's call, not crash the process; and a kept idle connection
    // to a server that died is forgotten, so the next call, once the server is back, connects
    // afresh (test/moves/postgres-move-crash.test.ts: the source killed during the copy).
    c.on('error', () => {
      if (this.idle.get(host) === c) this.idle.delete(host);
      this.failed.add(c);
    });
    try {
      await c.connect();
    } catch (err) {
      throw new ShardKitError('SHARD_UNAVAILABLE', `cannot connect to ${host} for the move: ${(err as Error).message}`, { cause: err });
    }
    this.hostOf.set(c, host);
    return c;
  }

  /**
   * One idle connection per host is kept between calls: the fence, the catch-up and verify run
   * while services hold writes, and a new connection costs a round trip and a backend start.
   * A connection that saw an error is closed instead (its state is unknown).
   */
  protected readonly idle = new Map<string, Client>();

  protected readonly hostOf = new WeakMap<Client, string>();

  protected failed = new WeakSet<Client>();

  /** Per move id: what verifyBeforeFreeze left for verifyFenced (this process only: a resumed mover verifies in full). */
  protected readonly preVerified = new Map<string, { unsettled: Set<string>; rows: number; tables: number }>();

  /** Per move id: the source tables' write counters when prepare published them (table-writes.ts), for verifyBeforeFreeze to tell the tables written since. */
  protected readonly writesAtPrepare = new Map<string, Map<string, bigint>>();

  /** Per move id: the tables verifyBeforeFreeze left unsettled, compared chunk by chunk since (settleHotChunks): verifyFenced compares their open chunks only. */
  protected readonly chunked = new Map<string, ChunkedTable[]>();

  /** Per move id, after a fence of this process that fenced every shard: the source's aggregates of the open chunks, read under its locks. */
  protected readonly fencedChunks = new Map<string, Map<string, Map<number, Aggregate>>>();

  /** Per move id: the target's sequence values (undefined: never used), read by beforeFreeze. */
  protected readonly targetSequences = new Map<string, Map<string, bigint | undefined>>();

  /** Per move id: the fence's plan, read by beforeFreeze. */
  protected readonly fencePlans = new Map<string, Map<number, string[]>>();

  /** Per move id, after a fence of this process that fenced every shard: the identity sequences' values it read under its locks. */
  protected readonly fenced = new Map<string, Map<string, bigint>>();

  /** Per move id, after such a fence: the tables it moved aside, per shard (verifyFenced needs not read the source's catalogue, whose caches the renames reset). */
  protected readonly fencedTables = new Map<string, Map<number, string[]>>();

  protected async acquire(host: string): Promise<Client> {
    const c = this.idle.get(host);
    if (c !== undefined) {
      this.idle.delete(host);
      return c;
    }
    return this.step(`connect ${host}`, () => this.connect(host));
  }

  protected release(c: Client): void {
    const host = this.hostOf.get(c);
    if (host === undefined || this.failed.has(c) || this.idle.has(host)) {
      void c.end().catch(() => undefined);
      return;
    }
    this.idle.set(host, c);
  }

  protected async withConn<T>(host: string, fn: (c: Client) => Promise<T>): Promise<T> {
    const c = await this.acquire(host);
    try {
      return await fn(c);
    } catch (err) {
      this.failed.add(c);
      throw err;
    } finally {
      this.release(c);
    }
  }

  /** libpq connection string the target master uses to reach the source master. */
  protected conninfo(host: string): string {
    const a = this.address(host);
    const v = (s: string) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
    return [
      `host=${v(a.socket ?? a.host ?? '127.0.0.1')}`, `port=${a.port ?? 5432}`, `user=${v(a.user)}`,
      ...(a.password !== undefined ? [`password=${v(a.password)}`] : []), `dbname=${v(this.options.database)}`,
    ].join(' ');
  }

  /** Which of our object tables exist in schema `ns`. */
  protected async present(c: Client, ns: string): Promise<string[]> {
    const { rows } = await c.query<{ t: string }>("SELECT c.relname AS t FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind IN ('r', 'p')", [ns]);
    const have = new Set(rows.map((r) => r.t));
    return this.tables.filter((t) => have.has(t));
  }

  /** present() for many schemas in one query (the fence, catch-up and verify run under the freeze). */
  protected async presentIn(c: Client, namespaces: string[]): Promise<Map<string, string[]>> {
    const { rows } = await c.query<{ ns: string; t: string }>("SELECT n.nspname AS ns, c.relname AS t FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = ANY($1::text[]) AND c.relkind IN ('r', 'p')", [namespaces]);
    const out = new Map<string, string[]>(namespaces.map((ns) => [ns, []]));
    for (const r of rows) out.get(r.ns)?.push(r.t);
    for (const [ns, have] of out) out.set(ns, this.tables.filter((t) => have.includes(t)));
    return out;
  }

  /** Whether `c`'s server holds the move's marker table: prepare makes it on the target, an abort drops it. */
  protected async markerOn(c: Client, move: MoveRecord): Promise<boolean> {
    const { rows } = await c.query('SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relname = $2', [MARKER_SCHEMA, replicationName(move.id)]);
    return rows.length > 0;
  }

  protected markerTable(move: MoveRecord): string {
    return `${qi(MARKER_SCHEMA)}.${qi(replicationName(move.id))}`;
  }

  protected async createMarker(c: Client, move: MoveRecord): Promise<void> {
    await c.query(markerSql(move.id));
  }

  protected async subscriptionExists(c: Client, move: MoveRecord): Promise<boolean> {
    const { rows } = await c.query('SELECT 1 FROM pg_subscription WHERE subname = $1', [replicationName(move.id)]);
    return rows.length > 0;
  }

  /** Per shard, the live object tables the fence moves aside (none: fenced already, a resumed mover). */
  protected async fencePlan(c: Client, move: MoveRecord): Promise<Map<number, string[]>> {
    const shards = moveShards(move);
    const have = await this.presentIn(c, [...shards.map((x) => shardDatabaseName(x)), ...shards.map(movedSchema)]);
    const plan = new Map<number, string[]>();
    for (const s of shards) {
      const live = have.get(shardDatabaseName(s))!;
      refuseFenceClash(shardDatabaseName(s), live, movedSchema(s), have.get(movedSchema(s))!, move.source.master);
      plan.set(s, live);
    }
    return plan;
  }

  /**
   * Bumps the marker row on the source and waits until the target applied it: logical
   * replication applies commits in order, so the target then holds everything the source
   * committed before. `required` (the catch-up): a missing marker or a timeout is an error;
   * otherwise (verify's recheck) they only end the wait.
   */
  protected async waitApplied(src: Client, dst: Client, move: MoveRecord, required = false): Promise<void> {
    const { rows: [m] } = await this.step('marker: UPDATE (source)', () => src.query<{ n: string }>(`UPDATE ${this.markerTable(move)} SET n = n + 1 WHERE id = 1 RETURNING n::text AS n`));
    if (m === undefined) {
      if (required) throw new ShardKitError('MOVE_STATE_LOST', `the marker row of move ${move.id} is missing on ${move.source.master}`);
      return;
    }
    const limit = this.options.catchUpTimeoutMs ?? 60_000;
    const deadline = Date.now() + limit;
    const t0 = performance.now();
    let polls = 0;
    for (;;) {
      polls++;
      const { rows } = await dst.query<{ n: string }>(`SELECT n::text AS n FROM ${this.markerTable(move)} WHERE id = 1`);
      if (rows.length > 0 && BigInt(rows[0]!.n) >= BigInt(m.n)) {
        this.options.onStep?.('marker: until applied on the target', performance.now() - t0);
        this.options.onStep?.('marker: target polls (count)', polls);
        return;
      }
      if (Date.now() > deadline) {
        if (required) throw new ShardKitError('SHARD_UNAVAILABLE', `the target ${move.target.master} did not apply the source's last writes within ${limit} ms (subscription ${replicationName(move.id)})`);
        return;
      }
      await sleep(5);
    }
  }

  async close(): Promise<void> {
    const all = [...this.idle.values()];
    this.idle.clear();
    await Promise.all(all.map((c) => c.end().catch(() => undefined)));
  }
}
