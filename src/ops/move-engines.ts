import { existsSync } from 'node:fs';
import type { ShardKitConfig } from '../config/config.js';
import { createBackend } from '../kit/backend-factory.js';
import { ShardKitError } from '../errors.js';
import type { CopyRate, SourceLagBound } from '../moves/copy-throttle.js';
import type { MoveEngine, VerifyReport } from '../moves/move-engine.js';
import { createMariadbMoveEngine, mariadbRestoreInTarget, moveAdmin } from '../moves/mariadb/index.js';
import { createPostgresMoveEngine, markerSql, POSTGRES_MOVE_MAX_LAG_BYTES, postgresRestoreInTarget } from '../moves/postgres/index.js';
import type { RestoreInTarget } from '../moves/restore-in-engine.js';
import { moveShards } from '../moves/move-shared.js';
import { postgresDialect } from '../storage/postgres/index.js';
import { compareFiles, createSqliteMoveEngine } from '../moves/sqlite/index.js';
import type { SchemaDef } from '../storage/shard-backend.js';
import { fleetTables } from '../storage/shard-names.js';
import type { SqliteBackend } from '../storage/sqlite/index.js';
import type { MoveRecord, ShardMap } from '../topology/shard-map.js';
import type { OnStep } from '../moves/step-timer.js';
import { DevCluster } from './dev/dev-cluster.js';
import { configHostAdmin, devHostAdmin } from './failover/host-admin.js';

/** A move engine for a config's storage backend, with its way to compare two copies of a shard. */
export interface OpenedMoveEngine {
  engine: MoveEngine;
  /** The freeze starts only when the engine's lag is at most this (engines that replicate before the freeze). */
  maxLag?: number;
  /**
   * Compares shard `s` between two hosts (a move's source and target, or a master and its
   * slave); undefined when there is no second copy to compare.
   */
  compare(s: number, pair: [string, string], move: MoveRecord | undefined): Promise<VerifyReport | undefined>;
  /** Closes the engine (and the backend it reads shard paths from). */
  close(): Promise<void>;
}

/**
 * Opens the move engine of the config's storage backend (`shards move`, `verify`, `drop-moved`):
 * the one place that picks an engine by backend, as kit/backend-factory.ts does for backends.
 */
export async function openMoveEngine(config: ShardKitConfig, schema: SchemaDef, dataDir: string, map: ShardMap, copy: { rate?: CopyRate; sourceLag?: SourceLagBound; streams?: number; onStep?: OnStep } = {}): Promise<OpenedMoveEngine> {
  // What every engine that copies takes alike: step timings and the copy's streams.
  const common = { ...(copy.onStep !== undefined ? { onStep: copy.onStep } : {}), ...(copy.streams !== undefined ? { copyStreams: copy.streams } : {}) };
  const rows = copy.rate !== undefined && 'rowsPerSecond' in copy.rate ? copy.rate.rowsPerSecond : undefined;
  const bytes = copy.rate !== undefined && 'bytesPerSecond' in copy.rate ? copy.rate.bytesPerSecond : undefined;
  const lagTx = copy.sourceLag !== undefined && 'transactions' in copy.sourceLag ? copy.sourceLag.transactions : undefined;
  const lagBytes = copy.sourceLag !== undefined && 'bytes' in copy.sourceLag ? copy.sourceLag.bytes : undefined;
  if (config.storage.backend === 'postgres') {
    // The binary COPY streams carry no row count a throttle could read before the rows reach the target.
    if (rows !== undefined) throw new ShardKitError('INVALID_ARGUMENT', `--max-rate on PostgreSQL is bytes per second (for example 20MB/s), not rows: got ${rows} rows/s`);
    // The standby's lag is a WAL position: there is no transaction count to compare.
    if (lagTx !== undefined) throw new ShardKitError('INVALID_ARGUMENT', `--max-source-lag on PostgreSQL is bytes of WAL (for example 64MB), not transactions: got ${lagTx}`);
    const storage = config.storage;
    const engine = createPostgresMoveEngine({ hosts: config.hosts, user: storage.user, ...(storage.password !== undefined ? { password: storage.password } : {}), database: storage.database, schema, ...(bytes !== undefined ? { maxBytesRate: bytes } : {}), ...(lagBytes !== undefined ? { maxSourceStandbyLagBytes: lagBytes } : {}), ...common });
    return {
      engine, maxLag: POSTGRES_MOVE_MAX_LAG_BYTES,
      // A move's source and target; otherwise the master and its streaming standby, chunk by chunk at the master's WAL position.
      compare: async (s, pair, move) => (move === undefined ? engine.verifyReplica(s, pair[0], pair[1]) : engine.verify({ ...move, range: [s, s] })),
      close: () => engine.close(),
    };
  }
  if (config.storage.backend === 'mysql') {
    // The slave's lag is read as transactions of the source's GTID domain not applied yet.
    if (lagBytes !== undefined) throw new ShardKitError('INVALID_ARGUMENT', `--max-source-lag on MariaDB is transactions (for example 1000), not bytes: got ${lagBytes} bytes`);
    const storage = config.storage;
    // Admin access (a dev cluster's sockets, or SHARDKIT_ADMIN_USER on a server fleet) enables the
    // replication pre-copy; without it the engine copies under the freeze.
    const cluster = DevCluster.open(dataDir);
    const admin = cluster !== undefined ? devHostAdmin(cluster) : process.env.SHARDKIT_ADMIN_USER ? configHostAdmin(config) : undefined;
    // MyRocks wide-column shards (wcNNNNN) move with the object shards of the same number, with
    // the mod-shard tables beside them, when the source masters them (docs/moves.md).
    const wideColumn = config.widecolumn?.engine === 'myrocks';
    const engine = createMariadbMoveEngine({
      hosts: config.hosts, user: storage.user, ...(storage.password !== undefined ? { password: storage.password } : {}), tables: fleetTables(schema, 'objects'),
      ...(wideColumn ? { wideColumn, modTables: fleetTables(schema, 'lookups') } : {}), ...(admin !== undefined ? { admin: moveAdmin(admin) } : {}),
      ...(rows !== undefined ? { maxRate: rows } : {}), ...(bytes !== undefined ? { maxBytesRate: bytes } : {}), ...(lagTx !== undefined ? { maxSourceSlaveLag: lagTx } : {}), ...common,
    });
    const replicaPair = (s: number): [string, string] | undefined => {
      const loc = s < map.modShardCount ? map.locateModShard(s) : undefined;
      return loc?.slave !== undefined ? [loc.master, loc.slave] : undefined;
    };
    return {
      engine,
      // A move's source and target; otherwise the master and its slave, chunk by chunk at the
      // master's GTID position (a wide-column shard on its own pair, the mod shard's).
      compare: async (s, pair, move) => {
        if (move !== undefined) return engine.verify({ ...move, range: [s, s] });
        const wc = wideColumn ? replicaPair(s) : undefined;
        if (wc === undefined || (wc[0] === pair[0] && wc[1] === pair[1])) return engine.verifyReplica(s, pair[0], pair[1]);
        const [a, b] = [await engine.verifyReplica(s, pair[0], pair[1], 30, 'objects'), await engine.verifyReplica(s, wc[0], wc[1], 30, 'widecolumn')];
        return { shards: 1, tables: a.tables + b.tables, rows: a.rows + b.rows, chunks: a.chunks + b.chunks, mismatches: [...a.mismatches, ...b.mismatches] };
      },
      close: () => engine.close(),
    };
  }
  const backend = (await createBackend({ config, dataDir, schema })) as SqliteBackend;
  const busyTimeoutMs = config.storage.busyTimeoutMs;
  const engine = createSqliteMoveEngine({ shardPath: (host, shard) => backend.shardPath({ host, shard, fleet: 'objects' }), ...(busyTimeoutMs !== undefined ? { busyTimeoutMs } : {}) });
  return {
    engine,
    compare: async (s, pair, move) => {
      const a = backend.shardPath({ host: pair[0], shard: s, fleet: 'objects' });
      const b = backend.shardPath({ host: pair[1], shard: s, fleet: 'objects' });
      // Embedded hosts have no replication: a slave directory without the file is no copy to compare.
      // A move's copy that is missing is a mismatch, found by compareFiles.
      if ((move === undefined && !existsSync(b)) || (!existsSync(a) && !existsSync(b))) return undefined;
      let r = compareFiles(s, a, b);
      // Recheck: a copy still being written can differ for a moment.
      if (r.mismatches.length > 0) r = compareFiles(s, a, b);
      return r;
    },
    close: async () => {
      await engine.close();
      await backend.close();
    },
  };
}

/** What `backup restore --shards --into` needs of the config's storage backend (src/ops/backup/restore-into.ts). */
export interface OpenedRestoreInTarget {
  moveTarget: RestoreInTarget;
  tables: string[];
  preamble?: (move: MoveRecord, marker?: boolean) => string;
}

/**
 * The move parts of a restore-in move for the config's backend: MariaDB's engine that fences by
 * RENAME (the copy comes from the backup, so no replication is set up), PostgreSQL's move engine
 * (its catch-up without a subscription only raises the sequences).
 */
export function openRestoreInTarget(config: ShardKitConfig, schema: SchemaDef, dataDir: string): OpenedRestoreInTarget {
  const tables = fleetTables(schema, 'objects');
  if (config.storage.backend === 'postgres') {
    const storage = config.storage;
    const moveTarget = postgresRestoreInTarget({ hosts: config.hosts, user: storage.user, ...(storage.password !== undefined ? { password: storage.password } : {}), database: storage.database, schema });
    // The move's marker (undo drops the target's tables only with it; none in place) and the shards as `shardkit init` makes them, in the load's transaction.
    const preamble = (move: MoveRecord, marker = true) => [...(marker ? [markerSql(move.id)] : []), ...moveShards(move).flatMap((s) => postgresDialect.createShard(schema, { host: move.target.master, shard: s, fleet: 'objects' }))].join(';\n');
    return { moveTarget, tables, preamble };
  }
  if (config.storage.backend === 'mysql') {
    if (config.widecolumn?.engine === 'myrocks') throw new ShardKitError('INVALID_ARGUMENT', 'restore --shards --into moves object shards only, and this fleet keeps MyRocks wide-column shards beside them (they move together): restore the backup in place instead: nothing changed');
    const storage = config.storage;
    const cluster = DevCluster.open(dataDir);
    const admin = cluster !== undefined ? devHostAdmin(cluster) : process.env.SHARDKIT_ADMIN_USER ? configHostAdmin(config) : undefined;
    const moveTarget = mariadbRestoreInTarget({ hosts: config.hosts, user: storage.user, ...(storage.password !== undefined ? { password: storage.password } : {}), tables, ...(admin !== undefined ? { admin: moveAdmin(admin) } : {}) });
    return { moveTarget, tables };
  }
  throw new ShardKitError('INVALID_ARGUMENT', 'restore --shards --into is built for MariaDB and PostgreSQL fleets; the embedded default restores its shard files in place: nothing changed');
}
