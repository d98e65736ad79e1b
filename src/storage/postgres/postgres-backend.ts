import { INSTAGRAM_MAX_SHARD } from '../../ids/instagram-id.js';
import { ShardKitError } from '../../errors.js';
import { checkRef } from '../backend-args.js';
import type { Fleet, SchemaDef, ShardRef } from '../shard-backend.js';
import { SqlBackend } from '../sql/sql-backend.js';
import { withDdlLockWait, type DdlLockPolicy, type DdlLockWait } from './ddl-lock-wait.js';
import { CURRENT_GENERATOR_SQL } from './instagram-next-id.js';
import { postgresDialect } from './postgres-dialect.js';
import { parsePostgresSchemaName, postgresSchemaName, qi } from './postgres-ddl.js';
import { mapPostgresError } from './postgres-errors.js';
import { PostgresHostPool } from './postgres-host-pool.js';
import { poolTarget } from '../host-address.js';

/** Connection settings shared by every host (config `storage` when backend is postgres). */
export interface PostgresStorageOptions {
  user?: string;
  password?: string;
  /** The database holding every shard schema on each server. */
  database?: string;
  poolSize?: number;
  connectTimeoutMs?: number;
  queryTimeoutMs?: number;
  /** `init` / `schema apply`: one wait for a lock another session holds. Default 2000, capped at half of queryTimeoutMs. */
  ddlLockTimeoutMs?: number;
  /** `init` / `schema apply`: waits per shard before LOCK_TIMEOUT. Default 8. */
  ddlAttempts?: number;
}

/** One server as declared in config `hosts`. */
export interface PostgresHostAddress {
  host?: string;
  port?: number;
  /** Directory of the server's unix socket. */
  socket?: string;
  user?: string;
  password?: string;
}

export interface PostgresBackendOptions {
  hosts: Record<string, PostgresHostAddress>;
  storage?: PostgresStorageOptions;
  schema: SchemaDef;
  /** Told (and awaited) each time a shard's DDL gave up waiting for a lock and will try again. */
  onDdlLockWait?: (wait: DdlLockWait) => void | Promise<void>;
}

/** Most IDs one nextInstagramIds call hands out. */
export const MAX_IDS_PER_CALL = 10_000;

/**
 * Logical shards as schemas in one database on PostgreSQL servers (`"db03429"."pins"`): the SQL
 * core (src/storage/sql/sql-backend.ts) with PostgreSQL's statements, errors and a pg pool per
 * host, plus each object shard's Instagram ID generator.
 */
export class PostgresBackend extends SqlBackend<PostgresHostPool, PostgresHostAddress> {
  readonly kind = 'postgres';
  private readonly storage: Required<Omit<PostgresStorageOptions, 'password'>> & { password?: string };
  private readonly ddlLock: DdlLockPolicy;

  constructor(options: PostgresBackendOptions) {
    super(options.hosts, options.schema, postgresDialect);
    this.storage = {
      user: options.storage?.user ?? 'postgres',
      database: options.storage?.database ?? 'shardkit',
      poolSize: options.storage?.poolSize ?? 10,
      connectTimeoutMs: options.storage?.connectTimeoutMs ?? 2000,
      queryTimeoutMs: options.storage?.queryTimeoutMs ?? 5000,
      ddlLockTimeoutMs: options.storage?.ddlLockTimeoutMs ?? 2000,
      ddlAttempts: options.storage?.ddlAttempts ?? 8,
      ...(options.storage?.password !== undefined ? { password: options.storage.password } : {}),
    };
    this.ddlLock = {
      lockTimeoutMs: Math.max(1, Math.min(this.storage.ddlLockTimeoutMs, Math.floor(this.storage.queryTimeoutMs / 2))),
      attempts: Math.max(1, Math.trunc(this.storage.ddlAttempts)),
      ...(options.onDdlLockWait ? { onLockWait: options.onDdlLockWait } : {}),
    };
  }

  protected override ddlSettings(): string[] {
    return [`SET LOCAL lock_timeout = '${this.ddlLock.lockTimeoutMs}ms'`];
  }

  /** Creates or upgrades a shard, waiting for other sessions' locks in bounded, retried waits (ddl-lock-wait.ts). */
  protected override _createShard(ref: ShardRef): Promise<void> {
    return withDdlLockWait(ref, this.ddlLock, () => super._createShard(ref));
  }

  protected newPool(host: string, address: PostgresHostAddress): PostgresHostPool {
    return new PostgresHostPool(host, {
      ...poolTarget(address, this.storage),
      database: this.storage.database,
      poolSize: this.storage.poolSize,
      connectTimeoutMs: this.storage.connectTimeoutMs,
      queryTimeoutMs: this.storage.queryTimeoutMs,
    });
  }

  /**
   * The core's complete shards, less object shards 0..8191 whose ID generator predates the
   * current one: `shardkit init` / `schema apply` recreate those, which upgrades it.
   */
  protected override async _listShards(host: string, fleet: Fleet): Promise<number[]> {
    const complete = await super._listShards(host, fleet);
    if (fleet !== 'objects') return complete;
    const { rows } = await this.query<{ db: string }>({ host }, CURRENT_GENERATOR_SQL);
    const current = new Set(rows.map((r) => parsePostgresSchemaName(r.db)));
    return complete.filter((shard) => shard > INSTAGRAM_MAX_SHARD || current.has(shard));
  }

  /**
   * `count` new Instagram-layout IDs from the shard's own `next_id()` (SPEC §1): what a column
   * `DEFAULT db00005.next_id()` hands out, in one round trip. Shards 0..8191 (13 bits) only.
   * CLOCK_MOVED_BACKWARDS when the server's clock went back further than the generator waits out.
   */
  async nextInstagramIds(ref: ShardRef, count = 1): Promise<bigint[]> {
    checkRef(ref);
    if (ref.fleet !== 'objects') throw new ShardKitError('INVALID_ARGUMENT', 'Instagram IDs come from object shards');
    if (ref.shard > INSTAGRAM_MAX_SHARD) throw new ShardKitError('INVALID_ARGUMENT', `shard ${ref.shard} has no Instagram ID generator: the layout holds shards 0..${INSTAGRAM_MAX_SHARD}`);
    if (!Number.isInteger(count) || count < 1 || count > MAX_IDS_PER_CALL) throw new ShardKitError('INVALID_ARGUMENT', `count must be an integer in 1..${MAX_IDS_PER_CALL}`);
    // A failed call's connection is closed. Since issue 20 next_id() keeps no session state (its
    // only lock ends with a subtransaction), so this is a precaution, not a need.
    this.open();
    try {
      const { rows } = await this.pool(ref.host).query<{ id: string }>(`SELECT ${qi(postgresSchemaName(ref.shard))}.next_id() AS id FROM generate_series(1, $1::int)`, [count], { discardOnError: true });
      return rows.map((r) => BigInt(r.id));
    } catch (err) {
      throw mapPostgresError(err, ref);
    }
  }
}
