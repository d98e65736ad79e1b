import { checkDatasetName } from '../dataset-config.js';

/**
 * Names and DDL of the MyRocks wide-column engine (docs/widecolumn.md, "One node or a fleet").
 *
 * - Wide-column shard n is the database `wc` + n zero-padded to 5 digits (`wc00042`): object
 *   shards are `db00042`, so both fleets can share a server without a clash.
 * - One table per dataset per shard, named like the dataset (names match DATASET_NAME, so they
 *   are safe identifiers), ENGINE=ROCKSDB.
 * - The dataset catalogue is the table `_catalog` in `wc00000`: dataset names start with a
 *   letter, so it cannot clash with a dataset, and it moves and fails over with shard 0.
 */
export const WC_DATABASE_PREFIX = 'wc';
export const CATALOG_SHARD = 0;
export const CATALOG_TABLE = '_catalog';

/** MyRocks TTL value of a cell that never expires (far from 2^64, so adding ttl_duration cannot wrap). */
export const NEVER_EXPIRES = 2n ** 62n;

export function wcDatabaseName(shard: number): string {
  if (!Number.isSafeInteger(shard) || shard < 0 || shard > 99_999) throw new RangeError(`wide-column shard ${shard} out of range`);
  return `${WC_DATABASE_PREFIX}${String(shard).padStart(5, '0')}`;
}

export function parseWcDatabaseName(name: string): number | undefined {
  const m = /^wc(\d{5})$/.exec(name);
  return m ? Number(m[1]) : undefined;
}

const quote = (identifier: string): string => `\`${identifier}\``;

/** `wc00042`.`events`: the only way a dataset name becomes an identifier (validated again here). */
export function datasetTable(shard: number, dataset: string): string {
  return `${quote(wcDatabaseName(shard))}.${quote(checkDatasetName(dataset))}`;
}

export function catalogTable(): string {
  return `${quote(wcDatabaseName(CATALOG_SHARD))}.${quote(CATALOG_TABLE)}`;
}

/** nts of a head record (cells have nts = -timestamp <= 0). */
export const HEAD_NTS = 1;

/**
 * One cell per SQL row. The primary key (rh, col, nts) sorts a row's cells by column (bytes), then
 * newest first: nts is the negated timestamp (MyRocks has no descending keys). rh is SHA-256 of
 * the row key (a row key may be 4096 bytes, more than a MyRocks key holds); the row key itself is
 * kept beside it for exports and checks. exp is MyRocks's TTL column (seconds since the epoch,
 * `ttl_duration=1`): MyRocks drops the cell in its own compactions once exp has passed.
 *
 * Head records: one per (row, column) under rh = headKey(row), nts = HEAD_NTS, holding the
 * column's newest cell (hts = its timestamp, v = its value, exp = its expiry), kept by the same
 * statement that writes the cells. They are the row's column directory: listing columns reads
 * one record per column, and a read of the latest versions reads only them (MariaDB has no
 * LATERAL join, and a loose index scan in a recursive CTE reads the whole row).
 */
export function datasetTableDdl(shard: number, dataset: string): string {
  return `CREATE TABLE IF NOT EXISTS ${datasetTable(shard, dataset)} (
  rh BINARY(32) NOT NULL,
  col VARBINARY(1024) NOT NULL,
  nts BIGINT NOT NULL,
  row_key VARBINARY(4096) NOT NULL,
  v LONGBLOB NOT NULL,
  exp BIGINT UNSIGNED NOT NULL,
  hts BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (rh, col, nts)
) ENGINE=ROCKSDB COMMENT='ttl_duration=1;ttl_col=exp;'`;
}

export function shardDatabaseDdl(shard: number): string {
  return `CREATE DATABASE IF NOT EXISTS ${quote(wcDatabaseName(shard))}`;
}

export function catalogDdl(): string {
  return `CREATE TABLE IF NOT EXISTS ${catalogTable()} (
  name VARCHAR(63) CHARACTER SET ascii NOT NULL PRIMARY KEY,
  id INT UNSIGNED NOT NULL,
  max_versions INT UNSIGNED NOT NULL,
  ttl_seconds BIGINT UNSIGNED NOT NULL,
  latest_index TINYINT NOT NULL,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  ready TINYINT NOT NULL
) ENGINE=ROCKSDB`;
}
