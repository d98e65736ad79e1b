import type { MoveRecord } from '../../topology/shard-map.js';
import { moveShards } from '../move-shared.js';
import { MAX_FENCE_SESSIONS } from './lock-fence.js';
import type { MoveAdmin } from './move-admin.js';
import type { Conn } from './names.js';

export interface FreezeConns {
  /** Source master: app user, admin; target master: app user, admin; the fence's admin connections (fence domain). */
  src: Conn;
  srcAdmin: Conn;
  dst: Conn;
  dstAdmin: Conn;
  fence: Conn[];
}

export interface FreezeConnsOptions {
  /** The mover's own (application user) connection to a host. */
  connect(host: string): Promise<Conn>;
  admin: MoveAdmin;
  /** gtid_domain_id of the fence's sessions: binlogged for the source's slave, skipped by the move connection. */
  fenceDomain: number;
  lockWaitTimeoutS: number;
  /** How many sessions the lock fence spreads the shards over (at most MAX_FENCE_SESSIONS). */
  fenceConnections: number;
}

/** An admin connection to the source whose statements are binlogged in the fence domain (replicated to the source's slave, never to the target). */
async function fenceConnection(host: string, options: FreezeConnsOptions): Promise<Conn> {
  const c = await options.admin.connect(host);
  try {
    await c.query(`SET SESSION gtid_domain_id = ${options.fenceDomain}`);
    await c.query(`SET SESSION lock_wait_timeout = ${Math.max(1, Math.floor(options.lockWaitTimeoutS))}`);
    // Verify may read the locked tables' rows on it (as on the target's admin connection): the same zone on both sides.
    await c.query("SET time_zone = '+00:00'");
  } catch (err) {
    c.destroy();
    throw err;
  }
  return c;
}

/**
 * Opens every connection the replicated freeze path uses, all at once, before the freeze (the
 * fence, catch-up and verify reuse them): a connect under the freeze would cost its round trips
 * there. All or none: one that fails closes the others.
 */
export async function openFreezeConns(move: MoveRecord, options: FreezeConnsOptions): Promise<FreezeConns> {
  const width = Math.max(1, Math.min(options.fenceConnections, moveShards(move).length, MAX_FENCE_SESSIONS));
  const { admin } = options;
  const opened = await Promise.allSettled<Conn>([
    options.connect(move.source.master), admin.connect(move.source.master), options.connect(move.target.master), admin.connect(move.target.master),
    ...Array.from({ length: width }, () => fenceConnection(move.source.master, options)),
  ]);
  const ok = opened.flatMap((o) => (o.status === 'fulfilled' ? [o.value] : []));
  const failed = opened.find((o) => o.status === 'rejected');
  if (failed !== undefined) {
    for (const c of ok) c.destroy();
    throw (failed as PromiseRejectedResult).reason;
  }
  // Held idle across phases: a server that dies meanwhile must fail the next query, not crash the mover with an unhandled 'error' event.
  for (const c of ok) c.on('error', () => undefined);
  const [src, srcAdmin, dst, dstAdmin, ...fence] = ok as [Conn, Conn, Conn, Conn, ...Conn[]];
  try {
    await dstAdmin.query("SET time_zone = '+00:00'");
  } catch (err) {
    for (const c of ok) c.destroy();
    throw err;
  }
  return { src, srcAdmin, dst, dstAdmin, fence };
}

export async function closeFreezeConns(k: FreezeConns): Promise<void> {
  await Promise.all([k.src, k.srcAdmin, k.dst, k.dstAdmin, ...k.fence].map((c) => c.end().catch(() => c.destroy())));
}
