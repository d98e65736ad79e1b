import { ShardKitError } from '../errors.js';
import type { ShardMap } from '../topology/shard-map.js';
import type { KitContext } from './kit-context.js';
import { checkMethodOptions } from './kit-options.js';

const STATS_OPTIONS: ReadonlySet<string> = new Set(['first', 'last', 'refresh']);

/** Object counts older than this are recounted (in the background) when someone asks. */
export const OBJECT_COUNT_MAX_AGE_MS = 30_000;

export interface ShardStatsOptions {
  /** First and last object shard (default: the whole map). */
  first?: number;
  last?: number;
  /** Recount the objects of these shards now and wait for it (one recount runs at a time). */
  refresh?: boolean;
}

/** One range of the shard map with the numbers of each of its shards (index i is shard range[0] + i). */
export interface ShardStatsRange {
  range: [number, number];
  master: string;
  slave?: string;
  open: boolean;
  /** The move whose freeze holds this range (docs/moves.md). */
  frozenBy?: string;
  reads: number[];
  writes: number[];
  /** Calls per second over the last `rateSeconds`; null until the counters were read twice, seconds apart. */
  rates: number[] | null;
  /** Rows of the object tables; null where never counted (or the count failed). */
  objects: Array<number | null>;
}

/** What GET /v1/admin/shards/stats returns (docs/dashboard.md). */
export interface ShardStats {
  /** The shard map version the ranges come from. */
  version: number;
  /** Wall-clock ms: when this kit started counting, and now. */
  since: number;
  now: number;
  rateSeconds: number | null;
  /** When the oldest object count shown was taken (null: none yet). */
  objectsAt: number | null;
  totals: { reads: number; writes: number; objects: number | null };
  ranges: ShardStatsRange[];
}

/**
 * Requests and objects per object shard, for the dashboard's heat map. Requests come from the
 * kit's counters (ShardTraffic, counted where calls are routed). Objects are counted by the
 * backend (countObjects: one query per shard, which reads the tables), so they are cached: a
 * read of stats older than OBJECT_COUNT_MAX_AGE_MS starts one recount in the background, and at
 * most one recount runs at a time (the bound on what watching the dashboard costs the databases).
 * Nobody asking means no counting at all.
 */
export class ShardStatsSource {
  private readonly counts: Array<number | undefined> = [];
  private readonly countedAt: number[] = [];
  private running: Promise<void> | undefined;
  private closed = false;

  constructor(private readonly ctx: KitContext) {}

  async stats(options: ShardStatsOptions = {}): Promise<ShardStats> {
    checkMethodOptions(options, STATS_OPTIONS, 'shardStats');
    const map = await this.ctx.map();
    const last = options.last ?? map.shardCount - 1;
    const first = options.first ?? 0;
    for (const [what, v] of [['first', first], ['last', last]] as const) {
      if (!Number.isInteger(v) || v < 0) throw new ShardKitError('INVALID_ARGUMENT', `${what} must be a shard number (an integer >= 0), got ${String(v).slice(0, 20)}`);
    }
    // Past the map first: `first=5000` alone is a shard the map lacks, not an order mistake.
    for (const s of [first, last]) if (s >= map.shardCount) throw new ShardKitError('UNKNOWN_SHARD', `shard ${s} is not in the shard map (0..${map.shardCount - 1})`);
    if (first > last) throw new ShardKitError('INVALID_ARGUMENT', `first (${first}) is after last (${last})`);

    if (options.refresh === true) await this.recount(map, first, last);
    else if (this.stale(first, last, Date.now()) && this.running === undefined) {
      // In the background: the answer shows the counts already known.
      void this.recount(map, first, last).catch(() => undefined);
    }

    const now = Date.now();
    const traffic = this.ctx.traffic.view(first, last, now);
    let objectsAt: number | null = null;
    let objectsTotal: number | null = null;
    let reads = 0;
    let writes = 0;
    const ranges: ShardStatsRange[] = [];
    for (const r of map.objectRanges()) {
      const lo = Math.max(first, r.range[0]);
      const hi = Math.min(last, r.range[1]);
      if (lo > hi) continue;
      const at = lo - first;
      const n = hi - lo + 1;
      const objects: Array<number | null> = [];
      for (let s = lo; s <= hi; s++) {
        const c = this.counts[s];
        objects.push(c ?? null);
        if (c !== undefined) {
          objectsTotal = (objectsTotal ?? 0) + c;
          objectsAt = objectsAt === null ? this.countedAt[s]! : Math.min(objectsAt, this.countedAt[s]!);
        }
      }
      const rr = traffic.reads.slice(at, at + n);
      const ww = traffic.writes.slice(at, at + n);
      for (let i = 0; i < n; i++) {
        reads += rr[i]!;
        writes += ww[i]!;
      }
      ranges.push({
        range: [lo, hi], master: r.master, ...(r.slave !== undefined ? { slave: r.slave } : {}), open: r.open === true,
        ...(r.frozen !== undefined ? { frozenBy: r.frozen.id } : {}),
        reads: rr, writes: ww, rates: traffic.rates === undefined ? null : traffic.rates.slice(at, at + n), objects,
      });
    }
    return {
      version: map.version, since: this.ctx.traffic.since, now, rateSeconds: traffic.rateSeconds ?? null, objectsAt,
      totals: { reads, writes, objects: objectsTotal }, ranges,
    };
  }

  close(): void {
    this.closed = true;
  }

  private stale(first: number, last: number, now: number): boolean {
    for (let s = first; s <= last; s++) {
      const at = this.countedAt[s];
      if (at === undefined || now - at > OBJECT_COUNT_MAX_AGE_MS) return true;
    }
    return false;
  }

  /** Counts shards first..last after any recount in progress (one at a time), each host's shards in turn, hosts in parallel. */
  private recount(map: ShardMap, first: number, last: number): Promise<void> {
    const run = (this.running ?? Promise.resolve()).then(async () => {
      const byHost = new Map<string, number[]>();
      for (let s = first; s <= last; s++) {
        const host = map.locate(s).master;
        const list = byHost.get(host);
        if (list) list.push(s);
        else byHost.set(host, [s]);
      }
      await Promise.all([...byHost].map(async ([host, shards]) => {
        for (const shard of shards) {
          if (this.closed) return;
          try {
            this.counts[shard] = await this.ctx.backend.countObjects({ host, shard, fleet: 'objects' });
            this.countedAt[shard] = Date.now();
          } catch {
            // A shard being moved (fenced) or a host down: keep the last count; it shows its age.
          }
        }
      }));
    });
    const tracked: Promise<void> = run.finally(() => {
      if (this.running === tracked) this.running = undefined;
    });
    this.running = tracked;
    return tracked;
  }
}
