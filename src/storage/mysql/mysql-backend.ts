import type { ObjectRecord, SchemaDef, ShardRef } from '../shard-backend.js';
import type { SqlValue } from '../sql/sql-dialect.js';
import { SqlBackend } from '../sql/sql-backend.js';
import { mysqlDialect } from './mysql-dialect.js';
import { MysqlHostPool } from './mysql-host-pool.js';
import { poolTarget } from '../host-address.js';

/** Connection settings shared by every host (config `storage` when backend is mysql). */
export interface MysqlStorageOptions {
  user?: string;
  password?: string;
  poolSize?: number;
  connectTimeoutMs?: number;
  queryTimeoutMs?: number;
}

/** One server as declared in config `hosts`. */
export interface MysqlHostAddress {
  host?: string;
  port?: number;
  socket?: string;
  user?: string;
  password?: string;
}

export interface MysqlBackendOptions {
  hosts: Record<string, MysqlHostAddress>;
  storage?: MysqlStorageOptions;
  schema: SchemaDef;
}

/**
 * Logical shards as databases on MySQL/MariaDB servers (`db03429`.`pins`): the SQL core
 * (src/storage/sql/sql-backend.ts) with MySQL's statements, errors and a mysql2 pool per host.
 */
export class MysqlBackend extends SqlBackend<MysqlHostPool, MysqlHostAddress> {
  readonly kind = 'mysql';
  private readonly storage: Required<Omit<MysqlStorageOptions, 'password'>> & { password?: string };
  private readonly steps = new Map<string, Promise<number | undefined>>();

  constructor(options: MysqlBackendOptions) {
    super(options.hosts, options.schema, mysqlDialect);
    this.storage = {
      user: options.storage?.user ?? 'root',
      poolSize: options.storage?.poolSize ?? 10,
      connectTimeoutMs: options.storage?.connectTimeoutMs ?? 2000,
      queryTimeoutMs: options.storage?.queryTimeoutMs ?? 5000,
      ...(options.storage?.password !== undefined ? { password: options.storage.password } : {}),
    };
  }

  /**
   * One multi-row INSERT (atomic by itself, one round trip) when the server hands out one
   * statement's AUTO_INCREMENT values consecutively: innodb_autoinc_lock_mode 0 or 1 (MariaDB's
   * default) for an INSERT whose row count is known, stepping by auto_increment_increment. Else
   * (mode 2 interleaves concurrent statements' values) the SQL core's row-at-a-time transaction.
   */
  protected override async _insertObjects(ref: ShardRef, table: string, data: string[]): Promise<ObjectRecord[]> {
    const step = data.length > 1 ? await this.autoIncrementStep(ref.host) : undefined;
    if (step === undefined) return super._insertObjects(ref, table, data);
    const now = Date.now();
    const values: SqlValue[] = [];
    for (const text of data) values.push(text, now / 1000);
    const res = await this.query(ref, `INSERT INTO ${this.dialect.table(ref.shard, table)} (data, ts) VALUES ${data.map(() => '(?, FROM_UNIXTIME(?))').join(',')}`, values);
    const first = this.dialect.insertedId(res);
    return data.map((text, i) => ({ localId: first + i * step, data: text, createdAt: new Date(now) }));
  }

  /** auto_increment_increment when one statement's values are consecutive on `host`, else undefined; asked once per host. */
  private autoIncrementStep(host: string): Promise<number | undefined> {
    let step = this.steps.get(host);
    if (!step) {
      step = this.query<{ mode: unknown; step: unknown }>({ host }, 'SELECT @@innodb_autoinc_lock_mode AS mode, @@auto_increment_increment AS step')
        .then(({ rows }) => (Number(rows[0]?.mode) <= 1 && Number(rows[0]?.step) >= 1 ? Number(rows[0]!.step) : undefined));
      step.catch(() => this.steps.delete(host));
      this.steps.set(host, step);
    }
    return step;
  }

  protected newPool(host: string, address: MysqlHostAddress): MysqlHostPool {
    return new MysqlHostPool(host, {
      ...poolTarget(address, this.storage),
      poolSize: this.storage.poolSize,
      connectTimeoutMs: this.storage.connectTimeoutMs,
      queryTimeoutMs: this.storage.queryTimeoutMs,
    });
  }
}
