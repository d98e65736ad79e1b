import type { HostPair } from '../../topology/shard-map.js';
import type { TableSummary } from './backup-manifest.js';

/** What `backup restore --shards A..B --into` asks an engine to restore aside (src/ops/backup/restore-into.ts). */
export interface AsideRequest {
  /** The logical shards, all held by the backup unit given beside the request. */
  shards: number[];
  /** The object fleet's tables (the ones a move carries); a shard's other tables (lookups) stay out. */
  tables: readonly string[];
  /** The spare pair: the load goes to its master (and, where the engine loads each host itself, its slave). */
  into: HostPair;
  /** Restore to this time with the archived log; else as the backup copied it. */
  toMs?: number;
  /**
   * The pair holds these shards now and their tables are replaced (a restore in place): the id
   * counters (AUTO_INCREMENT, sequences) keep their values where those are higher, so no id
   * handed out after the restore point is handed out again.
   */
  replace?: boolean;
  /** Told the rows loaded so far, of the total the restored shards hold. */
  onRows?: (rows: number, total: number) => void;
}

/** A scratch server's name: the hosts of a fleet never use it (upper case, digits). */
export const ASIDE_HOST = 'restore-aside';

/** `db00005.pins` -> is it one of the request's tables? */
export function inRequest(req: AsideRequest, name: string, schemaOf: (shard: number) => string): boolean {
  const dot = name.indexOf('.');
  const schema = name.slice(0, dot);
  return req.tables.includes(name.slice(dot + 1)) && req.shards.some((s) => schemaOf(s) === schema);
}

/** The summaries of the request's tables only. */
export function requested(req: AsideRequest, all: Record<string, TableSummary>, schemaOf: (shard: number) => string): Record<string, TableSummary> {
  return Object.fromEntries(Object.entries(all).filter(([name]) => inRequest(req, name, schemaOf)));
}
