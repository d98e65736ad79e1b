import type mysql from 'mysql2/promise';
import { shardDatabaseName } from '../../storage/shard-names.js';

/** Rows per copy and verify chunk. */
export const CHUNK_ROWS = 1000;

/** Where the fence puts any moved database's tables: `wc00005` -> `wc00005_moved`. */
export const movedName = (db: string): string => `${db}_moved`;

/** Where the fence puts a moved shard's tables on the source: `db00005_moved`. */
export const movedDatabaseName = (shard: number): string => movedName(shardDatabaseName(shard));

/** Wide-column shard n's database (src/widecolumn/myrocks/myrocks-ddl.ts wcDatabaseName: moves sit beside widecolumn, not above it). */
export const WC_PREFIX = 'wc';
export const wcDatabaseName = (shard: number): string => shardDatabaseName(shard, WC_PREFIX);

/**
 * One database of a moving shard: `dbNNNNN` (the object fleet's tables) and, on a fleet with
 * MyRocks wide-column shards, `wcNNNNN` (every table in it: one per dataset, and the catalogue in
 * wc00000). Every phase handles the list alike: copied, fenced, caught up, verified, switched and
 * dropped together.
 */
export interface ShardDatabase {
  shard: number;
  live: string;
  moved: string;
}

export type Conn = mysql.Connection;
export const q = (name: string): string => `\`${name.replace(/`/g, '``')}\``;

/** A primary key in SQL: its columns (`k`, for ORDER BY), the key as one comparable value (`tuple`), and placeholders for one key value (`qs`). */
export function keySql(keys: readonly string[]): { k: string; tuple: string; qs: string } {
  const k = keys.map(q).join(', ');
  return keys.length === 1 ? { k, tuple: k, qs: '?' } : { k, tuple: `(${k})`, qs: `(${keys.map(() => '?').join(', ')})` };
}

/**
 * Default gtid_domain_id of the replicated fence's statements on the source (see fenceDomainId).
 * It must be no pair's own gtid_domain_id; the dev cluster numbers pairs' domains 1, 2, ...
 */
export const FENCE_DOMAIN_ID = 1_000_000;
