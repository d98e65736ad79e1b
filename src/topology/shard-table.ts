import { ShardKitError } from '../errors.js';
import type { ShardLocation, ShardRange } from './shard-range.js';

export function invalid(message: string): never {
  throw new ShardKitError('INVALID_CONFIG', `invalid shard map: ${message}`);
}

/** Sorts and validates ranges: no overlap, no gap from `firstShard`, not reversed, master ≠ slave. */
export function checkedSorted(ranges: readonly ShardRange[], what: string, firstShard: number, lastShard: number | undefined): ShardRange[] {
  // Usually sorted already (stores keep ranges in order): then a copy, not a sort.
  let sorted = true;
  for (let i = 1; i < ranges.length && sorted; i++) sorted = ranges[i - 1]!.range[0] <= ranges[i]!.range[0];
  const out = sorted ? ranges.slice() : [...ranges].sort((a, b) => a.range[0] - b.range[0]);
  let expected = firstShard;
  for (const r of out) {
    const [lo, hi] = r.range;
    if (lo > hi) invalid(`${what} range [${lo}, ${hi}] is reversed`);
    if (lo < expected) invalid(`${what} range [${lo}, ${hi}] overlaps the range before it`);
    if (lo > expected) invalid(`${what} shards ${expected}..${lo - 1} are not covered by any range`);
    if (r.slave !== undefined && r.slave === r.master) invalid(`${what} range [${lo}, ${hi}] has the same master and slave`);
    expected = hi + 1;
  }
  if (lastShard !== undefined && expected - 1 !== lastShard) invalid(`${what} ranges cover 0..${expected - 1}, expected 0..${lastShard}`);
  return out;
}

/** Sorted, validated ranges with binary-search lookup (the mod-shard fleet: it changes rarely). */
export class RangeIndex {
  readonly ranges: ShardRange[];
  private readonly starts: number[];

  constructor(ranges: readonly ShardRange[], what: string, lastShard: number) {
    this.ranges = checkedSorted(ranges, what, 0, lastShard);
    this.starts = this.ranges.map((r) => r.range[0]);
  }

  find(shard: number): ShardRange | undefined {
    const r = this.ranges[lastAtOrBelow(this.starts, shard)];
    return r && r.range[0] <= shard && shard <= r.range[1] ? r : undefined;
  }
}

const CHUNK_BITS = 8;
const CHUNK = 1 << CHUNK_BITS;
/** The shard -> route table's pieces (a multiple of CHUNK, so a piece holds whole open-count chunks). */
const ROUTE_BITS = 10;
const ROUTE_PIECE = 1 << ROUTE_BITS;
const ROUTE_MASK = ROUTE_PIECE - 1;
/** Route indices are 16-bit (a shard -> route table of 2 bytes a shard): a fresh table never needs more, since it has at most one route per range. */
const MAX_ROUTES = 1 << 16;

/** What makes two ranges' routes the same: master, slave, open flag as stored, freeze. */
function rangeRouteKey(r: ShardRange): string {
  const open = r.open === undefined ? -1 : r.open ? 1 : 0;
  const f = r.frozen;
  return `${r.master} ${r.slave ?? ''} ${open}${f === undefined ? '' : ` ${f.id} ${f.source.master} ${f.source.slave ?? ''} ${f.target.master} ${f.target.slave ?? ''} ${f.frozenAt} ${f.holdMs}`}`;
}

/**
 * What routing needs of a range, interned: one frozen location per distinct (master, slave, open,
 * freeze), shared by every range and map version that has it (1,000 pairs: about 1,000 objects).
 * Append-only, so map versions patched from one another share it; a full build starts a new one.
 */
class Routes {
  readonly locations: ShardLocation[] = [];
  /** The `open` flag as stored: -1 absent, 0 false, 1 true (toJSON gives back what was written). */
  readonly openFlag: number[] = [];
  private readonly index = new Map<string, number>();

  get size(): number {
    return this.locations.length;
  }

  /** The route of `r`, or -1 when the table is full (the caller builds a new table). */
  intern(r: ShardRange): number {
    const open = r.open === undefined ? -1 : r.open ? 1 : 0;
    const f = r.frozen;
    const key = rangeRouteKey(r);
    let i = this.index.get(key);
    if (i === undefined) {
      if (this.locations.length >= MAX_ROUTES) return -1;
      i = this.locations.length;
      this.locations.push(Object.freeze({ master: r.master, ...(r.slave !== undefined ? { slave: r.slave } : {}), open: open === 1, ...(f !== undefined ? { frozen: f } : {}) }));
      this.openFlag.push(open);
      this.index.set(key, i);
    }
    return i;
  }

  /** The route of `r` if it has one (nothing added). */
  find(r: ShardRange): number | undefined {
    return this.index.get(rangeRouteKey(r));
  }

}

/**
 * The object shards, compact (#30: 2,000 subscribers must fit on one machine): a shard -> route
 * table of 16-bit indices, the ranges as two parallel typed arrays (start, route) in shard order,
 * and the interned routes. No object per shard or per range: at 65,536 shards and 17,000 ranges
 * that is ~0.25 MB. `location()` is three array reads (piece, route, location) and allocates nothing. Open shards are counted
 * per chunk of 256, so picking the k-th open shard is a search over chunk totals and one chunk.
 * A change makes a new table (the versions are immutable): the range arrays copied once, the
 * shard table's pieces only where shards changed, and only the changed ranges checked (patch).
 */
export class ShardTable {
  private constructor(
    private readonly routes: Routes,
    /**
     * The route of shard s: shardRoute[s >> ROUTE_BITS][s & ROUTE_MASK]. In pieces of 1,024 shards
     * so a change copies only the pieces it touches (#30: 2,000 subscribers each patch their own
     * map on every change; a flat table meant 128 KB copied per subscriber per change).
     */
    private readonly shardRoute: readonly Uint16Array[],
    private readonly shards: number,
    /** The ranges in shard order: where each starts (it ends where the next starts) and its route. */
    private readonly starts: Int32Array,
    private readonly rangeRoute: Uint16Array,
    /** openBefore[i]: open shards in chunks 0..i-1; the last entry is the total. */
    private readonly openBefore: Int32Array,
    /** How many ranges are frozen (usually none: then frozenRanges() looks at nothing). */
    private readonly frozenCount: number,
  ) {}

  get lastShard(): number {
    return this.shards - 1;
  }

  get rangeCount(): number {
    return this.starts.length;
  }

  /** From ranges already sorted and checked (checkedSorted) covering 0..last. */
  static fromSorted(ranges: readonly ShardRange[]): ShardTable {
    const routes = new Routes();
    const last = ranges[ranges.length - 1]!.range[1];
    const flat = new Uint16Array(last + 1);
    const starts = new Int32Array(ranges.length);
    const rangeRoute = new Uint16Array(ranges.length);
    for (let i = 0; i < ranges.length; i++) {
      const r = ranges[i]!;
      const route = routes.intern(r); // never -1: at most one route per range, and at most 65,536 ranges
      starts[i] = r.range[0];
      rangeRoute[i] = route;
      flat.fill(route, r.range[0], r.range[1] + 1);
    }
    const shardRoute: Uint16Array[] = [];
    for (let lo = 0; lo <= last; lo += ROUTE_PIECE) shardRoute.push(flat.slice(lo, Math.min(last + 1, lo + ROUTE_PIECE)));
    const frozen = ranges.reduce((n, r) => n + (r.frozen !== undefined ? 1 : 0), 0);
    return new ShardTable(routes, shardRoute, last + 1, starts, rangeRoute, openTotals(routes, shardRoute, last + 1, undefined, undefined), frozen);
  }

  private end(i: number): number {
    return i + 1 < this.starts.length ? this.starts[i + 1]! - 1 : this.lastShard;
  }

  /** The index of the range holding `shard` (which is in the table). */
  private rangeIndex(shard: number): number {
    return lastAtOrBelow(this.starts, shard);
  }

  private rangeAt(i: number): ShardRange {
    const loc = this.routes.locations[this.rangeRoute[i]!]!;
    const open = this.routes.openFlag[this.rangeRoute[i]!]!;
    const r: ShardRange = { range: [this.starts[i]!, this.end(i)], master: loc.master };
    if (loc.slave !== undefined) r.slave = loc.slave;
    if (open !== -1) r.open = open === 1;
    if (loc.frozen !== undefined) r.frozen = loc.frozen;
    return r;
  }

  /** The range holding `shard`, made on each call (routing uses location()). */
  find(shard: number): ShardRange | undefined {
    if (!(shard >= 0 && shard <= this.lastShard)) return undefined;
    return this.rangeAt(this.rangeIndex(shard));
  }

  location(shard: number): ShardLocation | undefined {
    if (!(shard >= 0 && shard <= this.lastShard)) return undefined;
    return this.routes.locations[this.shardRoute[shard >> ROUTE_BITS]![shard & ROUTE_MASK]!];
  }

  /** The ranges in shard order, made on each call (the table keeps none). */
  ranges(): ShardRange[] {
    const out = new Array<ShardRange>(this.starts.length);
    for (let i = 0; i < out.length; i++) out[i] = this.rangeAt(i);
    return out;
  }

  /** The ranges whose master is `master`, in shard order. */
  rangesOf(master: string): ShardRange[] {
    return this.rangesWithRoute((loc) => loc.master === master);
  }

  /** The ranges under a freeze (few: one per move in its cutover). */
  frozenRanges(): ShardRange[] {
    if (this.frozenCount === 0) return [];
    return this.rangesWithRoute((loc) => loc.frozen !== undefined);
  }

  /** The ranges whose route passes `test`: the routes are tested once each (a few thousand), then the ranges' 16-bit routes scanned. */
  private rangesWithRoute(test: (loc: ShardLocation) => boolean): ShardRange[] {
    const locs = this.routes.locations;
    const marked = new Uint8Array(locs.length);
    let any = false;
    for (let k = 0; k < locs.length; k++) if (test(locs[k]!)) any = (marked[k] = 1) === 1;
    const out: ShardRange[] = [];
    if (!any) return out;
    for (let i = 0; i < this.rangeRoute.length; i++) if (marked[this.rangeRoute[i]!] === 1) out.push(this.rangeAt(i));
    return out;
  }

  /** Adds every master and slave of the ranges to `into`. */
  addHostNames(into: Set<string>): void {
    const seen = new Uint8Array(this.routes.size);
    for (let i = 0; i < this.starts.length; i++) seen[this.rangeRoute[i]!] = 1;
    for (let k = 0; k < seen.length; k++) {
      if (seen[k] === 0) continue;
      const loc = this.routes.locations[k]!;
      into.add(loc.master);
      if (loc.slave !== undefined) into.add(loc.slave);
    }
  }

  get openCount(): number {
    return this.openBefore[this.openBefore.length - 1]!;
  }

  /** The k-th open shard (0-based) in shard order. */
  openShard(k: number): number {
    let lo = 0;
    let hi = this.openBefore.length - 2;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.openBefore[mid]! <= k) lo = mid;
      else hi = mid - 1;
    }
    let left = k - this.openBefore[lo]!;
    const locs = this.routes.locations;
    const end = Math.min(this.lastShard, (lo << CHUNK_BITS) + CHUNK - 1);
    for (let s = lo << CHUNK_BITS; s <= end; s++) if (locs[this.shardRoute[s >> ROUTE_BITS]![s & ROUTE_MASK]!]!.open && left-- === 0) return s;
    throw new Error(`open shard ${k} not found`); // unreachable: the totals count these shards
  }

  /**
   * This table with `removed` ranges replaced by `added` (a change of some pairs' records), or
   * undefined when the change is not a like-for-like replacement of the same shards (a range not
   * in this table, an overlap, a gap, shards added past the end): the caller then builds the map
   * whole, which checks everything and names what is wrong. Checks only the ranges changed.
   */
  patch(removedGiven: readonly ShardRange[], addedAll: readonly ShardRange[], removedMasters: ReadonlyArray<{ master: string; ranges: number }> = []): ShardTable | undefined {
    let removedAll = removedGiven;
    if (removedMasters.length > 0) {
      const found = this.rangesOfMastersIn(removedMasters, addedAll);
      if (found === undefined) return undefined;
      removedAll = removedGiven.length === 0 ? found : [...removedGiven, ...found];
    }
    // A changed pair record brings all its ranges back, most of them as they were (a one-shard
    // switch changes one or two of the ~17 each pair holds): those cancel out, so the work below
    // follows the shards that changed, not the size of the records.
    const { removed, added, unchanged } = withoutUnchanged(removedAll, addedAll);
    // What cancelled out must still be in this table as it is (a record's old ranges may come from
    // elsewhere than this table: the file store keeps them).
    for (const r of unchanged) {
      const [lo, hi] = r.range;
      if (!(lo >= 0 && lo <= hi && hi <= this.lastShard)) return undefined;
      const i = this.rangeIndex(lo);
      if (this.starts[i] !== lo || this.end(i) !== hi || this.rangeRoute[i] !== this.routes.find(r)) return undefined;
    }
    const gone: number[] = [];
    for (const r of removed) {
      const [lo, hi] = r.range;
      if (!(lo >= 0 && lo <= hi && hi <= this.lastShard)) return undefined;
      const i = this.rangeIndex(lo);
      if (this.starts[i] !== lo || this.end(i) !== hi || this.routes.locations[this.rangeRoute[i]!]!.master !== r.master) return undefined;
      gone.push(i);
    }
    gone.sort((a, b) => a - b);
    for (let k = 1; k < gone.length; k++) if (gone[k] === gone[k - 1]) return undefined;
    const put = [...added].sort((a, b) => a.range[0] - b.range[0]);
    // The added ranges must tile exactly the shards of the removed ones: in order, without overlap,
    // each inside the removed shards, as many shards in all.
    let removedShards = 0;
    for (const i of gone) removedShards += this.end(i) - this.starts[i]! + 1;
    let addedShards = 0;
    let g = 0;
    let prevHi = -1;
    for (const r of put) {
      const [lo, hi] = r.range;
      if (!(lo > prevHi && lo <= hi && hi <= this.lastShard)) return undefined;
      if (r.slave !== undefined && r.slave === r.master) return undefined;
      prevHi = hi;
      addedShards += hi - lo + 1;
      while (g < gone.length && this.end(gone[g]!) < lo) g++;
      // Walk the removed ranges that cover lo..hi: consecutive indices, hence adjacent shards.
      let k = g;
      if (k >= gone.length || this.starts[gone[k]!]! > lo) return undefined;
      while (this.end(gone[k]!) < hi) {
        if (k + 1 >= gone.length || gone[k + 1] !== gone[k]! + 1) return undefined;
        k++;
      }
    }
    if (addedShards !== removedShards) return undefined;
    const routes = this.routes;
    const putRoutes = new Array<number>(put.length);
    for (let k = 0; k < put.length; k++) if ((putRoutes[k] = routes.intern(put[k]!)) < 0) return undefined;
    const n = this.starts.length - gone.length + put.length;
    const starts = new Int32Array(n);
    const rangeRoute = new Uint16Array(n);
    // Kept ranges are copied a run at a time; each run of removed ranges gives way to the added
    // ranges inside its shards (the tiling check above put every added range in one such run).
    let out = 0;
    let kept = 0;
    let a = 0;
    for (let k = 0; k < gone.length;) {
      let k2 = k;
      while (k2 + 1 < gone.length && gone[k2 + 1] === gone[k2]! + 1) k2++;
      const first = gone[k]!;
      starts.set(this.starts.subarray(kept, first), out);
      rangeRoute.set(this.rangeRoute.subarray(kept, first), out);
      out += first - kept;
      const spanEnd = this.end(gone[k2]!);
      for (; a < put.length && put[a]!.range[0] <= spanEnd; a++, out++) {
        starts[out] = put[a]!.range[0];
        rangeRoute[out] = putRoutes[a]!;
      }
      kept = gone[k2]! + 1;
      k = k2 + 1;
    }
    starts.set(this.starts.subarray(kept), out);
    rangeRoute.set(this.rangeRoute.subarray(kept), out);
    const shardRoute = this.shardRoute.slice();
    const copied = new Uint8Array(shardRoute.length);
    const touched = new Uint8Array(this.openBefore.length - 1);
    for (let k = 0; k < put.length; k++) {
      const [lo, hi] = put[k]!.range;
      for (let p = lo >> ROUTE_BITS; p <= hi >> ROUTE_BITS; p++) {
        if (copied[p] === 0) {
          copied[p] = 1;
          shardRoute[p] = shardRoute[p]!.slice();
        }
        const base = p << ROUTE_BITS;
        shardRoute[p]!.fill(putRoutes[k]!, Math.max(lo, base) - base, Math.min(hi + 1, base + ROUTE_PIECE) - base);
      }
      touched.fill(1, lo >> CHUNK_BITS, (hi >> CHUNK_BITS) + 1);
    }
    let frozen = this.frozenCount;
    for (const i of gone) {
      if (routes.locations[this.rangeRoute[i]!]!.frozen !== undefined) frozen--;
    }
    for (const k of putRoutes) {
      if (routes.locations[k]!.frozen !== undefined) frozen++;
    }
    return new ShardTable(routes, shardRoute, this.shards, starts, rangeRoute, openTotals(routes, shardRoute, this.shards, this.openBefore, touched), frozen);
  }

  /**
   * The ranges of `masters` (pairs whose records changed), found from the shards `added` covers
   * instead of a pass over every range (#30: a watcher does this on every change): in a like-for-
   * like change the changed pairs' old ranges are exactly the ranges under their new ones (each
   * master comes with how many ranges its old record held).
   * Undefined when that does not hold (a range there of another pair, or fewer of a pair's ranges
   * than it has): the caller builds the map whole, which names what is wrong.
   */
  private rangesOfMastersIn(masters: ReadonlyArray<{ master: string; ranges: number }>, added: readonly ShardRange[]): ShardRange[] | undefined {
    const changed = new Map<string, number>();
    for (const m of masters) changed.set(m.master, m.ranges);
    const seen = new Set<number>();
    const out: ShardRange[] = [];
    for (const r of added) {
      const [lo, hi] = r.range;
      if (!(lo >= 0 && lo <= hi && hi <= this.lastShard)) return undefined;
      for (let i = this.rangeIndex(lo); i < this.starts.length && this.starts[i]! <= hi; i++) {
        if (seen.has(i)) continue;
        seen.add(i);
        const range = this.rangeAt(i);
        if (!changed.has(range.master)) return undefined;
        out.push(range);
      }
    }
    // The pairs' records said how many ranges they held: fewer found means some lie elsewhere (a gap).
    let held = 0;
    for (const n of changed.values()) held += n;
    return held === out.length ? out : undefined;
  }
}

/** `removed` and `added` without the ranges in both (same shards, same route): a record rewritten with them unchanged. */
function withoutUnchanged(removed: readonly ShardRange[], added: readonly ShardRange[]): { removed: readonly ShardRange[]; added: readonly ShardRange[]; unchanged: readonly ShardRange[] } {
  if (removed.length === 0 || added.length === 0) return { removed, added, unchanged: [] };
  // Removed ranges are ranges of one table: no two start at the same shard.
  const byStart = new Map<number, number>();
  for (let i = 0; i < removed.length; i++) byStart.set(removed[i]!.range[0], i);
  const dropRemoved = new Uint8Array(removed.length);
  const keptAdded: ShardRange[] = [];
  const unchanged: ShardRange[] = [];
  for (const r of added) {
    const i = byStart.get(r.range[0]);
    if (i !== undefined && dropRemoved[i] === 0 && sameRange(removed[i]!, r)) {
      dropRemoved[i] = 1;
      unchanged.push(r);
    } else keptAdded.push(r);
  }
  return { removed: removed.filter((_, i) => dropRemoved[i] === 0), added: keptAdded, unchanged };
}

function sameRange(a: ShardRange, b: ShardRange): boolean {
  if (a.range[1] !== b.range[1] || a.master !== b.master || a.slave !== b.slave || a.open !== b.open) return false;
  return a.frozen === b.frozen || (a.frozen !== undefined && b.frozen !== undefined && rangeRouteKey(a) === rangeRouteKey(b));
}

/** Open shards before each chunk; with `previous`, only the `touched` chunks are counted again. */
function openTotals(routes: Routes, shardRoute: readonly Uint16Array[], shards: number, previous: Int32Array | undefined, touched: Uint8Array | undefined): Int32Array {
  const chunks = (shards + CHUNK - 1) >> CHUNK_BITS;
  const out = new Int32Array(chunks + 1);
  const locs = routes.locations;
  for (let c = 0; c < chunks; c++) {
    let open: number;
    if (previous !== undefined && touched![c] === 0) open = previous[c + 1]! - previous[c]!;
    else {
      open = 0;
      const end = Math.min(shards, (c + 1) << CHUNK_BITS);
      for (let s = c << CHUNK_BITS; s < end; s++) if (locs[shardRoute[s >> ROUTE_BITS]![s & ROUTE_MASK]!]!.open) open++;
    }
    out[c + 1] = out[c]! + open;
  }
  return out;
}

/** The index of the last of the ascending `starts` at or below `shard` (0 when none is). */
function lastAtOrBelow(starts: ArrayLike<number>, shard: number): number {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid]! <= shard) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}
