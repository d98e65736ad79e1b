import { createHash } from 'node:crypto';
import { ShardKitError } from '../errors.js';
import type { MoveRecord } from '../topology/shard-map.js';
import type { ChunkMismatch, VerifyReport } from './move-engine.js';
import { withLogin } from '../storage/host-address.js';

/** The shards a move carries, in order: its range's first to last. */
export function moveShards(move: MoveRecord): number[] {
  const out: number[] = [];
  for (let s = move.range[0]; s <= move.range[1]; s++) out.push(s);
  return out;
}

/**
 * A chunk's rows as one comparable value (row count and SHA-1 of the rows as JSON, one per line).
 * BigInt cells (SQLite's integers past 2^53) are written as `123n`, so they hash and never throw.
 */
export function hashRows(rows: unknown[][]): string {
  const h = createHash('sha1');
  for (const r of rows) h.update(JSON.stringify(r, (_k, v) => (typeof v === 'bigint' ? `${v}n` : v))).update('\n');
  return `${rows.length}:${h.digest('hex')}`;
}

/** First and last key of a chunk as the report prints them: `12`, or `(from,to)` for a composite key. */
export function keyText(k: readonly unknown[]): string {
  return k.length === 1 ? String(k[0]) : `(${k.map(String).join(',')})`;
}

/**
 * The fence plan's refusal: a table both live and in the fenced place (`movedName`) on the
 * source is a half-done earlier fence or hand work; which copy is right only an operator can tell.
 */
export function refuseFenceClash(live: string, liveTables: readonly string[], movedName: string, movedTables: readonly string[], source: string): void {
  const both = liveTables.filter((t) => movedTables.includes(t));
  if (both.length > 0) throw new ShardKitError('MOVE_TABLE_CLASH', `${live}.${both[0]} exists both live and in ${movedName} on ${source}: resolve by hand before moving`);
}

/** An empty verify report, to add tables to. */
export function emptyReport(shards = 0): VerifyReport {
  return { shards, tables: 0, rows: 0, chunks: 0, mismatches: [] };
}

/** Adds one table's comparison (chunked or settled at once) to a verify report. */
export function addTableResult(report: VerifyReport, r: { rows: number; chunks: number; mismatches?: readonly ChunkMismatch[] }): void {
  report.rows += r.rows;
  report.chunks += r.chunks;
  if (r.mismatches !== undefined) report.mismatches.push(...r.mismatches);
}

/**
 * A config host's address with its credentials: the host's own user/password win over the
 * storage section's. An undeclared host is bad input (a typo in `--to`), never a crash.
 */
export function hostAddress<H extends { user?: string; password?: string }>(hosts: Record<string, H>, host: string, defaults: { user: string; password?: string }): H & { user: string; password?: string } {
  const h = hosts[host];
  if (h === undefined) throw new ShardKitError('INVALID_ARGUMENT', `unknown host ${host}: it is not declared in the config's "hosts"`);
  return withLogin(h, defaults);
}

/**
 * The server of one of a move's pairs that takes writes now: its recorded master, or its slave
 * when the pair failed over since the move recorded it (a switched move's record, and the target
 * of one under way, keep the hosts they started with). For cleanups that must run where they
 * replicate to the other server: the source's drop-moved, the target's part of an abort. A host
 * that does not answer counts as not writable.
 */
export async function writableHostOf(move: MoveRecord, side: 'source' | 'target', writable: (host: string) => Promise<boolean>): Promise<string> {
  const { master, slave } = move[side];
  if (await writable(master).catch(() => false)) return master;
  if (slave !== undefined && (await writable(slave).catch(() => false))) return slave;
  throw new ShardKitError('SHARD_UNAVAILABLE', `neither ${master} nor ${slave ?? 'a slave'} of move ${move.id}'s ${side} pair takes writes now: start the pair's master (or fail the pair over), then run the command again`);
}
