import type { SchemaDef } from '../shard-backend.js';
import { SqlBackend } from '../sql/sql-backend.js';
import { mysqlDialect } from './mysql-dialect.js';
import { MysqlHostPool } from './mysql-host-pool.js';

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

  protected newPool(host: string, address: MysqlHostAddress): MysqlHostPool {
    const password = address.password ?? this.storage.password;
    return new MysqlHostPool(host, {
      ...(address.host !== undefined ? { host: address.host } : {}),
      ...(address.port !== undefined ? { port: address.port } : {}),
      ...(address.socket !== undefined ? { socket: address.socket } : {}),
      user: address.user ?? this.storage.user,
      ...(password !== undefined ? { password } : {}),
      poolSize: this.storage.poolSize,
      connectTimeoutMs: this.storage.connectTimeoutMs,
      queryTimeoutMs: this.storage.queryTimeoutMs,
    });
  }
}
