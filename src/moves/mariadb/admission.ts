import type { MoveRecord } from '../../topology/shard-map.js';
import type { FreezeCost } from '../move-engine.js';
import type { MoveAdmin } from './move-admin.js';
import { binlogPos, gtidByDomain, sourceDomain } from './move-replication.js';
import { q } from './names.js';
import { keyBounds } from './pre-verify.js';

/**
 * What the freeze will wait for, measured on the live hosts just before it (the runner's
 * admission check): the target's catch-up to the source's position of now (what catch-up waits
 * for once the fence holds), then the fenced check's key bounds on the target (the statements
 * verifyFenced reads there: each table's lowest and highest key). A target that does not catch up
 * within `waitS` costs Infinity.
 */
export async function measureFreezeCost(admin: MoveAdmin, move: MoveRecord, tables: ReadonlyArray<{ name: string; keys: readonly string[] }>, waitS: number): Promise<FreezeCost> {
  const [src, dst] = await Promise.all([admin.connect(move.source.master), admin.connect(move.target.master)]);
  try {
    const t0 = performance.now();
    const pos = gtidByDomain(await binlogPos(src)).get(await sourceDomain(src))?.text;
    let caughtUp = true;
    if (pos !== undefined) {
      const [r] = await dst.query('SELECT MASTER_GTID_WAIT(?, ?) AS w', [pos, waitS]);
      caughtUp = Number((r as Array<{ w: number | string }>)[0]!.w) === 0;
    }
    const catchUpMs = caughtUp ? performance.now() - t0 : Infinity;
    const t1 = performance.now();
    await keyBounds(dst, tables.map((t, i) => ({ name: t.name.split('.').map(q).join('.'), keys: t.keys, i })), []);
    const boundsMs = performance.now() - t1;
    return { ms: catchUpMs + boundsMs, what: `catch-up ${Math.round(catchUpMs)} ms, key bounds ${Math.round(boundsMs)} ms` };
  } finally {
    await Promise.all([src, dst].map((c) => c.end().catch(() => c.destroy())));
  }
}
