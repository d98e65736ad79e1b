import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { ShardKitError } from '../../errors.js';
import type { VerifyReport } from '../move-engine.js';
import { compareChunks } from './postgres-verify.js';
import { addTableResult, emptyReport } from '../move-shared.js';

/** How long verify waits, per chunk, for a standby to replay up to the master's position. */
export const STANDBY_WAIT_MS = 30_000;

/** A server and the name the config gives it (for messages). */
export interface NamedClient {
  c: pg.Client;
  name: string;
}

const qi = (s: string): string => pg.escapeIdentifier(s);

/**
 * Refuses to compare a "standby" that is not one of `master`: a server that is not in recovery
 * (a promoted or stand-alone server: its rows can differ for reasons verify cannot tell apart),
 * or one with another system identifier (a copy of another cluster: its WAL positions mean
 * nothing against the master's, so no wait on them could make the comparison consistent).
 */
export async function requireStandbyOf(master: NamedClient, standby: NamedClient): Promise<void> {
  const read = async (x: NamedClient) => (await x.c.query<{ recovery: boolean; sysid: string }>(
    'SELECT pg_is_in_recovery() AS recovery, (SELECT system_identifier::text FROM pg_control_system()) AS sysid')).rows[0]!;
  const [m, s] = [await read(master), await read(standby)];
  if (!s.recovery) throw new ShardKitError('INVALID_CONFIG', `${standby.name} is not a standby (it is not in recovery): shards verify compares a master with its streaming standby, and the map names ${standby.name} as ${master.name}'s slave`);
  if (m.sysid !== s.sysid) throw new ShardKitError('INVALID_CONFIG', `${standby.name} is not a standby of ${master.name} (system identifier ${s.sysid}, the master's is ${m.sysid}): fix the map's slave, or rebuild the standby (shardkit pair rebuild-slave)`);
}

/**
 * The consistent point of one chunk: the master's WAL position read after its chunk
 * (pg_current_wal_lsn: every commit the chunk saw is at or before it), then a wait until the
 * standby has replayed that far (pg_last_wal_replay_lsn). A standby that does not get there
 * within `waitMs` (paused, disconnected, far behind) is an error naming its position: verify
 * never compares against rows older than the master's.
 */
export function replaySync(master: NamedClient, standby: NamedClient, waitMs: number): () => Promise<void> {
  return async () => {
    const lsn = (await master.c.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn')).rows[0]!.lsn;
    const deadline = Date.now() + waitMs;
    for (;;) {
      const { rows: [r] } = await standby.c.query<{ ok: boolean; at: string | null; paused: boolean }>(
        'SELECT coalesce(pg_last_wal_replay_lsn() >= $1::pg_lsn, false) AS ok, pg_last_wal_replay_lsn()::text AS at, pg_is_wal_replay_paused() AS paused', [lsn]);
      if (r!.ok) return;
      if (Date.now() >= deadline) {
        throw new ShardKitError('SHARD_UNAVAILABLE', `${standby.name} did not replay ${master.name}'s WAL up to ${lsn} within ${waitMs} ms (it has replayed up to ${r!.at ?? 'nothing'}${r!.paused ? '; its replay is paused: SELECT pg_wal_replay_resume() there' : ''}): not comparing against a stale copy`);
      }
      await sleep(10);
    }
  };
}

/**
 * One shard's object tables (`tables`, present on either side) in schema `ns`, master against
 * standby, chunk by chunk at the master's position (compareChunks with replaySync).
 */
export async function verifyStandby(shard: number, ns: string, tables: { master: string[]; standby: string[]; all: string[] }, master: NamedClient, standby: NamedClient, waitMs = STANDBY_WAIT_MS): Promise<VerifyReport> {
  await requireStandbyOf(master, standby);
  const report = emptyReport(1);
  const sync = replaySync(master, standby, waitMs);
  for (const t of tables.all) {
    const a = tables.master.includes(t) ? { c: master.c, table: `${qi(ns)}.${qi(t)}` } : undefined;
    const b = tables.standby.includes(t) ? { c: standby.c, table: `${qi(ns)}.${qi(t)}` } : undefined;
    if (a === undefined && b === undefined) continue;
    report.tables++;
    // Services write on: a chunk read while a row was added and removed again around the standby's
    // read is no mismatch; only a difference that holds over 5 reads is (a CI run saw the former).
    const r = await compareChunks(shard, t, a, b, sync, { replica: true, confirm: 5 });
    addTableResult(report, r);
  }
  return report;
}
