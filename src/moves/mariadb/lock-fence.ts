import { createHash } from 'node:crypto';
import type mysql from 'mysql2/promise';
import { ShardKitError } from '../../errors.js';

type Conn = mysql.Connection;
const q = (name: string): string => `\`${name.replace(/`/g, '``')}\``;

/** One moving table as the lock fence sees it: live in `db`, renamed into `moved` once the fence is made permanent. */
export interface LockedTable {
  db: string;
  moved: string;
  table: string;
}

/** The tables one fence session locked (and later renames), on that session. */
export interface LockedGroup {
  conn: Conn;
  tables: LockedTable[];
}

/**
 * The fence while it only blocks: every moving table held by `LOCK TABLES ... WRITE` on one of
 * the fence sessions, and the "go" user lock held by `goConn`. `armed` are the batches sent by
 * armLockFence: each waits for "go", renames its tables aside and unlocks.
 */
export interface LockFence {
  moveId: string;
  goConn: Conn;
  groups: LockedGroup[];
  armed?: Array<Promise<unknown>>;
}

/** At most this many fence sessions per move (the user locks waitFenceSessions looks at). */
export const MAX_FENCE_SESSIONS = 32;

/** How long an armed batch waits for "go" before renaming anyway (a permanent fence is always safe). */
const GO_TIMEOUT_S = 60;

const tag = (moveId: string): string => createHash('sha1').update(moveId).digest('hex').slice(0, 16);
const goLock = (moveId: string): string => `shardkit_go_${tag(moveId)}`;
const sessionLock = (moveId: string, i: number): string => `shardkit_fence_${tag(moveId)}_${i}`;

/**
 * Drains and blocks the moving tables without DDL (metadata locks only, no fdatasync):
 * `LOCK TABLES ... WRITE` waits (lock_wait_timeout) for every transaction in flight on them, so
 * one that wrote commits before it and is in the binlog, or fails (vitess#9481); later writers
 * and readers wait. Each session also takes its own user lock, which it keeps until the server
 * has finished its armed batch: waitFenceSessions watches those. Locks die with the connections,
 * so a mover killed here leaves the source serving (no rename was made).
 */
export async function lockFence(moveId: string, goConn: Conn, groups: LockedGroup[]): Promise<LockFence> {
  if (groups.length > MAX_FENCE_SESSIONS) throw new ShardKitError('INVALID_CONFIG', `at most ${MAX_FENCE_SESSIONS} fence connections`);
  if (!(await takeUserLock(goConn, goLock(moveId)))) throw new ShardKitError('SHARD_UNAVAILABLE', `another mover holds the fence of move ${moveId} on the source`);
  await Promise.all(groups.map(async (g, i) => {
    if (!(await takeUserLock(g.conn, sessionLock(moveId, i)))) throw new ShardKitError('SHARD_UNAVAILABLE', `another mover holds fence session ${i} of move ${moveId} on the source`);
    if (g.tables.length > 0) await g.conn.query(`LOCK TABLES ${g.tables.map((t) => `${q(t.db)}.${q(t.table)} WRITE`).join(', ')}`);
  }));
  return { moveId, goConn, groups };
}

async function takeUserLock(c: Conn, name: string): Promise<boolean> {
  const [rows] = await c.query('SELECT GET_LOCK(?, 0) AS l', [name]);
  return Number((rows as Array<{ l: number | string | null }>)[0]!.l) === 1;
}

/**
 * One statement (an anonymous compound statement): the server runs it to its end even when the
 * client is gone, and sends nothing before it ends (a batch of separate statements would write
 * each one's result to a dead socket on the way).
 */
const renameBlock = (moveId: string, tables: readonly LockedTable[]): string => [
  // Taken and given back at once: every session's block waits for the same "go".
  `BEGIN NOT ATOMIC DO GET_LOCK('${goLock(moveId)}', ${GO_TIMEOUT_S})`,
  `DO RELEASE_LOCK('${goLock(moveId)}')`,
  ...tables.map((t) => `ALTER TABLE ${q(t.db)}.${q(t.table)} RENAME TO ${q(t.moved)}.${q(t.table)}`),
  'END',
].join('; ');

/**
 * Right before the switch's compare-and-set: each fence session is sent one statement,
 * `BEGIN NOT ATOMIC DO GET_LOCK(go); ALTER TABLE ... RENAME TO dbNNNNN_moved ...; END` (ALTER
 * ... RENAME is allowed under LOCK TABLES for write-locked tables; RENAME TABLE is not), then
 * UNLOCK TABLES; this waits until the server shows every session waiting for "go". From then on
 * the fence becomes permanent whatever happens to the mover: "go" is released by
 * completeLockFence after the switch, or by the server when the mover's connection dies (checked
 * on MariaDB 10.11 over TCP and the socket: the server finishes the block of a client killed
 * with -9, and the locks go with the session after it). A table renamed under the lock is
 * missing for a writer waiting on it (the fence error: it re-reads the map); the others stay
 * locked until the session unlocks or ends, so no writer gets in between. The renames are
 * binlogged in the fence domain (the session's gtid_domain_id), like the plain fence.
 */
export async function armLockFence(f: LockFence): Promise<void> {
  const ids = f.groups.filter((g) => g.tables.length > 0).map((g) => g.conn.threadId);
  f.armed = f.groups.map((g) => (g.tables.length > 0 ? g.conn.query(renameBlock(f.moveId, g.tables)).then(() => g.conn.query('UNLOCK TABLES')) : Promise.resolve()));
  // Settled here so a failure is never unhandled; completeLockFence reads the outcome.
  const outcomes = f.armed.map((p) => p.then(() => undefined, (err: unknown) => err));
  for (let waited = 0; ; waited += 5) {
    const failed = await Promise.race([Promise.all(outcomes).then((e) => e.find((x) => x !== undefined)), new Promise<undefined>((r) => setTimeout(() => r(undefined), 0))]);
    if (failed !== undefined) throw failed;
    const [rows] = await f.goConn.query(`SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE STATE = 'User lock' AND ID IN (${ids.map(() => '?').join(', ')})`, ids);
    if (Number((rows as Array<{ n: number | string }>)[0]!.n) === ids.length) return;
    if (waited > 10_000) throw new ShardKitError('SHARD_UNAVAILABLE', 'the fence sessions on the source did not start their rename batch within 10 s');
    await new Promise((r) => setTimeout(r, 5));
  }
}

/**
 * After the switch (or on the way to an abort, when armed): "go" released, the batches awaited.
 * A block that failed stopped before its UNLOCK TABLES, so its session still blocks the tables it
 * had not renamed: they are renamed one by one on it, then unlocked.
 */
export async function completeLockFence(f: LockFence): Promise<void> {
  if (f.armed === undefined) return;
  await f.goConn.query('SELECT RELEASE_LOCK(?)', [goLock(f.moveId)]);
  const done = await Promise.allSettled(f.armed);
  for (const [i, d] of done.entries()) {
    if (d.status === 'fulfilled') continue;
    const g = f.groups[i]!;
    const dbs = [...new Set(g.tables.map((t) => t.db))];
    const [rows] = await g.conn.query(`SELECT TABLE_SCHEMA AS d, TABLE_NAME AS t FROM information_schema.TABLES WHERE TABLE_SCHEMA IN (${dbs.map(() => '?').join(', ')})`, dbs);
    const live = new Set((rows as Array<{ d: string; t: string }>).map((r) => `${r.d}.${r.t}`));
    for (const t of g.tables.filter((x) => live.has(`${x.db}.${x.table}`))) await g.conn.query(`ALTER TABLE ${q(t.db)}.${q(t.table)} RENAME TO ${q(t.moved)}.${q(t.table)}`);
    await g.conn.query('UNLOCK TABLES');
  }
}

/**
 * Waits until no session of this move's lock fence is alive on the source: a mover killed after
 * arming leaves its batches running on the server (they finish the renames); an abort or resume
 * in a new process must not read the catalogue half-way through them.
 */
export async function waitFenceSessions(c: Conn, moveId: string, timeoutS = 60): Promise<void> {
  const names = Array.from({ length: MAX_FENCE_SESSIONS }, (_, i) => sessionLock(moveId, i));
  const deadline = Date.now() + timeoutS * 1000;
  for (;;) {
    const [rows] = await c.query(`SELECT ${names.map((_, i) => `IS_USED_LOCK(?) AS l${i}`).join(', ')}`, names);
    const row = (rows as Array<Record<string, unknown>>)[0]!;
    if (Object.values(row).every((v) => v === null)) return;
    if (Date.now() >= deadline) throw new ShardKitError('SHARD_UNAVAILABLE', `a fence session of move ${moveId} is still running on the source after ${timeoutS} s`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
