import { ShardKitError } from '../errors.js';
import { activeFreeze } from './range-freeze.js';
import type { RangeFreeze, ShardMap } from './shard-map.js';

/**
 * Holding a write while its shard is frozen (docs/moves.md), shared by the object fleet
 * (src/kit/kit-context.ts) and the MyRocks wide-column engine (src/widecolumn/myrocks): both wait
 * the same way, with their own map source and their own idea of which freeze covers a shard.
 */
export interface FreezeHold {
  /** The map in force now. */
  map(): ShardMap;
  /** Resolves on the next map or after `ms`, whichever comes first. */
  next(ms: number): Promise<void>;
  /** The freeze that holds `shard`'s writes in `map` at `now`, if any. */
  freezeOf(map: ShardMap, shard: number, now: number): RangeFreeze | undefined;
  /** Throws (CLOSED) when the caller was closed while holding. */
  checkOpen?(): void;
}

/** How often a held write re-reads the store, in case the watch missed (or has not yet delivered) the switch. */
export const HOLD_POLL_MS = 20;

/**
 * Waits while `shard` is frozen, at most until the freeze's budget runs out (counted from its
 * frozenAt, and never longer than holdMs from now, whatever the clocks say). Returns the map to
 * route with: the switched one, the unfrozen one (aborted), or, with `orMoving`, SHARD_MOVING
 * when the budget ran out first.
 */
export async function holdWhileFrozen(hold: FreezeHold, shard: number, orMoving: boolean): Promise<ShardMap> {
  let map = hold.map();
  const first = hold.freezeOf(map, shard, Date.now());
  if (first === undefined) return map;
  const start = Date.now();
  const deadline = Math.min(first.frozenAt + first.holdMs, start + first.holdMs);
  for (;;) {
    const now = Date.now();
    const f = hold.freezeOf(map, shard, now);
    if (f === undefined) {
      // Held for the whole budget and still frozen by the same move: the switch did not come in
      // time, so the write is refused rather than sent to a host that may be fenced.
      if (orMoving && frozenBy(map, first.id)) throw movingError(shard, first.id, now - start);
      return map;
    }
    if (now >= deadline) {
      if (!orMoving) return map;
      throw movingError(shard, f.id, now - start);
    }
    await hold.next(Math.min(HOLD_POLL_MS, deadline - now));
    hold.checkOpen?.();
    map = hold.map();
  }
}

/** Is some object range still frozen by `id` (past its budget or not)? */
function frozenBy(map: ShardMap, id: string): boolean {
  return map.frozenObjectRanges().some((r) => r.frozen?.id === id);
}

/**
 * The freeze that holds writes to mod shard `shard` (MyRocks wide-column shards): a move of the
 * object shard with the same number that carries the mod shards it finds on its source
 * (detail.modShards, move-state.ts switchMove), or a planned failover of the host that masters
 * it (failover-freeze.ts freezes every object range of that host).
 */
export function modShardFreeze(map: ShardMap, shard: number, now: number = Date.now()): RangeFreeze | undefined {
  const host = map.locateModShard(shard).master;
  const f = activeFreeze(map, shard, now);
  if (f !== undefined && f.source.master === host && map.move(f.id)?.detail?.modShards === true) return f;
  for (const m of map.moves()) {
    if (m.kind !== 'failover' || m.source.master !== host) continue;
    const g = activeFreeze(map, m.range[0], now);
    if (g?.id === m.id) return g;
  }
  return undefined;
}

/**
 * Whether `map` shows mod shard `shard` moving off `host`: it has switched away, its writes are
 * frozen, or a move or failover from `host` still touches it. A statement on `host` that meets a
 * fence (table missing, read-only master) is then the move's or failover's fence, to wait out and
 * retry once; otherwise it is what it says (a table dropped by hand, a host made read-only by an
 * operator). Shared by the kit's lookups and the MyRocks wide-column engine.
 */
export function modShardMoving(map: ShardMap, shard: number, host: string): boolean {
  return map.locateModShard(shard).master !== host || modShardFreeze(map, shard) !== undefined
    || map.moves().some((m) => m.source.master === host && (m.kind === 'failover' || (m.range[0] <= shard && shard <= m.range[1])));
}

export function movingError(shard: number, moveId: string | undefined, heldMs: number, cause?: unknown): ShardKitError {
  return new ShardKitError(
    'SHARD_MOVING',
    `shard ${shard} is being moved${moveId !== undefined ? ` (${moveId})` : ''} and did not switch within its hold budget${heldMs > 0 ? ` (held ${heldMs} ms)` : ''}: nothing was written, retry`,
    { ...(cause !== undefined ? { cause } : {}), details: { shard, ...(moveId !== undefined ? { moveId } : {}), retryAfterSeconds: 1 } },
  );
}
