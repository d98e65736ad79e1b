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
    let lo = 0;
    let hi = this.starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.starts[mid]! <= shard) lo = mid;
      else hi = mid - 1;
    }
    const r = this.ranges[lo];
    return r && r.range[0] <= shard && shard <= r.range[1] ? r : undefined;
  }
}

const CHUNK_BITS = 8;
const CHUNK = 1 << CHUNK_BITS;

/** 256 consecutive shards: their ranges, how many are open, and their locations once asked for. */
interface Chunk {
  readonly slots: ShardRange[];
  readonly open: number;
  locs: ShardLocation[] | undefined;
}

function chunkOf(slots: ShardRange[]): Chunk {
  let open = 0;
  for (const r of slots) if (r.open === true) open++;
  return { slots, open, locs: undefined };
}

/**
 * The object shards as a shard → range table in chunks of 256 shards, shared between map versions:
 * a change copies only the chunks it touches (a one-shard switch: one or two), so a subscriber's
 * cost follows the change, not the map (#30). `location()` is O(1) and allocates nothing per call:
 * a chunk's locations are made once per map version, on its first lookup. Open shards are counted
 * per chunk, so picking the k-th open shard is a search over chunk totals and one chunk.
 */
export class ShardTable {
  private rangeList: ShardRange[] | undefined;

  private constructor(
    private readonly chunks: Chunk[],
    readonly lastShard: number,
    /** openBefore[i]: open shards in chunks 0..i-1; the last entry is the total. */
    private readonly openBefore: Int32Array,
    rangeList?: ShardRange[],
  ) {
    this.rangeList = rangeList;
  }

  /** From ranges already sorted and checked (checkedSorted) covering 0..last. */
  static fromSorted(ranges: ShardRange[]): ShardTable {
    const last = ranges[ranges.length - 1]!.range[1];
    const chunks: Chunk[] = [];
    let k = 0;
    for (let base = 0; base <= last; base += CHUNK) {
      const end = Math.min(last, base + CHUNK - 1);
      const slots = new Array<ShardRange>(end - base + 1);
      for (let s = base; s <= end; s++) {
        while (ranges[k]!.range[1] < s) k++;
        slots[s - base] = ranges[k]!;
      }
      chunks.push(chunkOf(slots));
    }
    return new ShardTable(chunks, last, openTotals(chunks), ranges);
  }

  find(shard: number): ShardRange | undefined {
    if (!(shard >= 0 && shard <= this.lastShard)) return undefined;
    return this.chunks[shard >> CHUNK_BITS]!.slots[shard & (CHUNK - 1)];
  }

  location(shard: number): ShardLocation | undefined {
    if (!(shard >= 0 && shard <= this.lastShard)) return undefined;
    const chunk = this.chunks[shard >> CHUNK_BITS]!;
    return (chunk.locs ??= locationsOf(chunk.slots, shard & ~(CHUNK - 1)))[shard & (CHUNK - 1)];
  }

  /** The ranges in shard order (made from the table on first use when the table was patched). */
  ranges(): ShardRange[] {
    if (this.rangeList === undefined) {
      const out: ShardRange[] = [];
      let prev: ShardRange | undefined;
      for (const c of this.chunks) for (const r of c.slots) if (r !== prev) out.push((prev = r));
      this.rangeList = out;
    }
    return this.rangeList;
  }

  get openCount(): number {
    return this.openBefore[this.chunks.length]!;
  }

  /** The k-th open shard (0-based) in shard order. */
  openShard(k: number): number {
    let lo = 0;
    let hi = this.chunks.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.openBefore[mid]! <= k) lo = mid;
      else hi = mid - 1;
    }
    let left = k - this.openBefore[lo]!;
    const slots = this.chunks[lo]!.slots;
    for (let i = 0; i < slots.length; i++) if (slots[i]!.open === true && left-- === 0) return (lo << CHUNK_BITS) + i;
    throw new Error(`open shard ${k} not found`); // unreachable: the totals count these slots
  }

  /**
   * This table with `removed` ranges replaced by `added` (a change of some pairs' records), or
   * undefined when the change is not a like-for-like replacement of the same shards (a range not
   * in this table, an overlap, a gap, shards added past the end): the caller then builds the map
   * whole, which checks everything and names what is wrong. Checks only the shards changed.
   */
  patch(removed: readonly ShardRange[], added: readonly ShardRange[]): ShardTable | undefined {
    const copied = new Map<number, ShardRange[]>();
    const slotsFor = (shard: number): ShardRange[] => {
      const c = shard >> CHUNK_BITS;
      let s = copied.get(c);
      if (s === undefined) copied.set(c, (s = this.chunks[c]!.slots.slice()));
      return s;
    };
    const hole = HOLE;
    for (const r of removed) {
      const [lo, hi] = r.range;
      if (!(lo >= 0 && lo <= hi && hi <= this.lastShard)) return undefined;
      for (let s = lo; s <= hi; s++) {
        const slots = slotsFor(s);
        const cur = slots[s & (CHUNK - 1)]!;
        if (cur.range[0] !== lo || cur.range[1] !== hi || cur.master !== r.master) return undefined;
        slots[s & (CHUNK - 1)] = hole;
      }
    }
    for (const r of added) {
      const [lo, hi] = r.range;
      if (!(lo >= 0 && lo <= hi && hi <= this.lastShard)) return undefined;
      if (r.slave !== undefined && r.slave === r.master) return undefined;
      for (let s = lo; s <= hi; s++) {
        const slots = slotsFor(s);
        if (slots[s & (CHUNK - 1)] !== hole) return undefined;
        slots[s & (CHUNK - 1)] = r;
      }
    }
    const chunks = this.chunks.slice();
    for (const [c, slots] of copied) {
      for (const r of slots) if (r === hole) return undefined;
      chunks[c] = chunkOf(slots);
    }
    return new ShardTable(chunks, this.lastShard, openTotals(chunks));
  }
}

/** Marks a slot emptied by a patch until an added range fills it. */
const HOLE: ShardRange = { range: [-1, -1], master: '' };

/**
 * A chunk's locations, made together on the chunk's first locate: one allocation per shard and map
 * version instead of one per call, laid out in shard order (random lookups over 65,536 shards stay
 * near each other in memory). Frozen: every caller shares them.
 */
function locationsOf(slots: readonly ShardRange[], base: number): ShardLocation[] {
  const out = new Array<ShardLocation>(slots.length);
  for (let i = 0; i < slots.length; i++) {
    const r = slots[i]!;
    out[i] = Object.freeze({
      shard: base + i, master: r.master, ...(r.slave !== undefined ? { slave: r.slave } : {}), open: r.open === true,
      ...(r.frozen !== undefined ? { frozen: r.frozen } : {}),
    });
  }
  return out;
}

function openTotals(chunks: readonly Chunk[]): Int32Array {
  const out = new Int32Array(chunks.length + 1);
  for (let i = 0; i < chunks.length; i++) out[i + 1] = out[i]! + chunks[i]!.open;
  return out;
}
