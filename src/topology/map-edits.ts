import { ShardKitError } from '../errors.js';
import { PINTEREST_MAX_SHARD } from '../ids/pinterest-id.js';
import type { HostPair, ShardMap, ShardMapJson, ShardRange } from './shard-map.js';

/**
 * The operator's changes to the shard map (SPEC §5, growing and healing) as pure functions:
 * map in, next map JSON out. The caller validates the result with ShardMap.fromJSON and
 * writes it with compare-and-set (change-shard-map.ts).
 */

/** An inclusive span of shards, `first..last`. */
export interface ShardSpan {
  first: number;
  last: number;
}

export type Fleet = 'objects' | 'mod';

export type { HostPair };

function bad(message: string): never {
  throw new ShardKitError('INVALID_ARGUMENT', message);
}

/** Parses `first..last` (or a single shard `n`); shards are object-ID shards, so at most 65535. */
export function parseShardSpan(text: string): ShardSpan {
  const m = /^([0-9]{1,6})(?:\.\.([0-9]{1,6}))?$/.exec(text);
  if (!m) bad(`a shard range is first..last (e.g. 1024..1535) or one shard, got ${JSON.stringify(text.slice(0, 40))}`);
  const first = Number(m[1]);
  const last = m[2] === undefined ? first : Number(m[2]);
  if (first > last) bad(`shard range ${first}..${last} is reversed`);
  if (last > PINTEREST_MAX_SHARD) bad(`shard range ${first}..${last} goes past ${PINTEREST_MAX_SHARD}, the last shard an ID can name`);
  return { first, last };
}

const spanText = (s: ShardSpan): string => (s.first === s.last ? `${s.first}` : `${s.first}..${s.last}`);

function copyRange(r: ShardRange, lo: number, hi: number): ShardRange {
  const out: ShardRange = { range: [lo, hi], master: r.master };
  if (r.slave !== undefined) out.slave = r.slave;
  if (r.open !== undefined) out.open = r.open;
  if (r.frozen !== undefined) out.frozen = r.frozen;
  return out;
}

/**
 * Map edits never touch shards a move holds (frozen, or being copied): the move's cutover
 * compare-and-set expects the range where it left it. Finish or abort the move first.
 */
export function refuseMoving(map: ShardMap, span: ShardSpan, what = 'shards', options: { aborting?: 'allowed' } = {}): void {
  for (const m of map.moves()) {
    if (m.phase === 'switched' || m.range[1] < span.first || m.range[0] > span.last) continue;
    if (m.phase === 'aborting' && options.aborting === 'allowed' && m.kind === 'move') continue;
    throw new ShardKitError(
      'SHARD_FROZEN',
      `${what} ${spanText(span)} overlap ${m.range[0]}..${m.range[1]}, which ${m.kind === 'move' ? 'move' : 'failover'} ${m.id} holds (phase ${m.phase}): finish or abort it first (shardkit shards move --resume/--abort)`,
      { details: { moveId: m.id } },
    );
  }
}

/**
 * Applies `edit` to the shards of `span`, splitting the ranges at its edges, then merges
 * neighbours that came out alike; ranges must be sorted. The map edits here and the moves'
 * freeze/switch/abort (src/moves/move-state.ts) all change a span this way.
 */
export function carveSpan(ranges: readonly ShardRange[], span: ShardSpan, edit: (r: ShardRange) => ShardRange): ShardRange[] {
  const out: ShardRange[] = [];
  for (const r of ranges) {
    const [lo, hi] = r.range;
    if (hi < span.first || lo > span.last) {
      out.push(copyRange(r, lo, hi));
      continue;
    }
    if (lo < span.first) out.push(copyRange(r, lo, span.first - 1));
    out.push(edit(copyRange(r, Math.max(lo, span.first), Math.min(hi, span.last))));
    if (hi > span.last) out.push(copyRange(r, span.last + 1, hi));
  }
  return mergeAdjacent(out);
}

/** Joins neighbouring ranges with the same master, slave and open flag, so maps stay small. */
export function mergeAdjacent(ranges: readonly ShardRange[]): ShardRange[] {
  const out: ShardRange[] = [];
  for (const r of ranges) {
    const prev = out[out.length - 1];
    if (prev && prev.range[1] + 1 === r.range[0] && prev.master === r.master && prev.slave === r.slave && prev.open === r.open && prev.frozen?.id === r.frozen?.id) {
      prev.range = [prev.range[0], r.range[1]];
    } else {
      out.push(copyRange(r, r.range[0], r.range[1]));
    }
  }
  return out;
}

function withPair(r: ShardRange, pair: HostPair): ShardRange {
  const out: ShardRange = { range: r.range, master: pair.master };
  if (pair.slave !== undefined) out.slave = pair.slave;
  if (r.open !== undefined) out.open = r.open;
  return out;
}

function checkPair(pair: HostPair): void {
  if (pair.slave !== undefined && pair.slave === pair.master) bad(`master and slave must be different hosts, both are ${pair.master}`);
}

/**
 * Failover: every range (object and mod shards) mastered by `host` gets its slave as master;
 * `host` becomes the slave (to be rebuilt), or with dropOldMaster the range has no slave.
 */
export function promoteSlave(map: ShardMap, host: string, options: { dropOldMaster?: boolean } = {}): ShardMapJson {
  const json = map.toJSON();
  const mastered = [...json.ranges, ...json.modShards.ranges].filter((r) => r.master === host);
  if (mastered.length === 0) bad(`host ${host} is master of no range: nothing to promote`);
  // A move being aborted can never switch, and its undo follows the range to its new master
  // (move-state.ts asMappedSource): a source whose master died mid-move is failed over, not left
  // down until both hosts come back for the abort.
  for (const r of json.ranges) if (r.master === host) refuseMoving(map, { first: r.range[0], last: r.range[1] }, `host ${host} masters shards`, { aborting: 'allowed' });
  const lonely = mastered.filter((r) => r.slave === undefined);
  if (lonely.length > 0) {
    const which = lonely.map((r) => `${json.ranges.includes(r) ? 'object' : 'mod'} shards ${spanText({ first: r.range[0], last: r.range[1] })}`);
    bad(`host ${host} has no slave to promote for ${which.join(', ')}`);
  }
  const promote = (r: ShardRange): ShardRange => {
    if (r.master !== host) return r;
    const out: ShardRange = { range: r.range, master: r.slave! };
    if (!options.dropOldMaster) out.slave = host;
    if (r.open !== undefined) out.open = r.open;
    return out;
  };
  return withPairRanges(json, promote);
}

/**
 * `json` with `edit` applied to every range, object and mod shards, and every other part of the
 * map carried as it was: a pair's failover or new slave must not lose the moves recorded in the
 * map (a running mover would meet UNKNOWN_MOVE, a switched move could never be dropped) nor a
 * read-only mark. The records are not rewritten either, as a planned failover leaves them
 * (failover-freeze.ts): a move whose target pair was failed over is refused by the move's own
 * freeze and switch (move-state.ts), not redirected to hosts that do not hold its copy.
 */
export function withPairRanges(json: ShardMapJson, edit: (r: ShardRange) => ShardRange): ShardMapJson {
  return {
    ...json,
    ranges: mergeAdjacent(json.ranges.map(edit)),
    modShards: { count: json.modShards.count, ranges: mergeAdjacent(json.modShards.ranges.map(edit)) },
  };
}

/**
 * Growing by moving shards: `span`, which must lie inside one existing range, moves to the new
 * pair; that range splits into up to three. Open flags stay as they were.
 */
export function moveShards(map: ShardMap, span: ShardSpan, pair: HostPair, options: { fleet?: Fleet } = {}): ShardMapJson {
  checkPair(pair);
  const json = map.toJSON();
  const mod = options.fleet === 'mod';
  const ranges = mod ? json.modShards.ranges : json.ranges;
  const what = mod ? 'mod shards' : 'object shards';
  const last = ranges[ranges.length - 1]!.range[1];
  if (span.last > last) bad(`${what} ${spanText(span)} go past the last ${mod ? 'mod shard' : 'shard'} of the map, ${last}${mod ? '' : ' (to add shards, use topology open with --master/--slave)'}`);
  if (!mod) refuseMoving(map, span, what);
  const home = ranges.find((r) => r.range[0] <= span.first && span.first <= r.range[1])!;
  if (span.last > home.range[1]) {
    bad(`${what} ${spanText(span)} span two ranges (${home.range[0]}..${home.range[1]} ends at ${home.range[1]}): split one range at a time`);
  }
  const next = carveSpan(ranges, span, (r) => withPair(r, pair));
  return mod ? { ...json, modShards: { count: json.modShards.count, ranges: next } } : { ...json, ranges: next };
}

/**
 * Whether new objects may be placed on `span`. Shards past the map's last shard are added
 * (served by `pair`, required then), extending the map; the span must then start at or before
 * the first new shard so no gap is left.
 */
export function setOpen(map: ShardMap, span: ShardSpan, open: boolean, pair?: HostPair): ShardMapJson {
  const json = map.toJSON();
  const last = json.ranges[json.ranges.length - 1]!.range[1];
  refuseMoving(map, { first: span.first, last: Math.min(span.last, last) });
  if (span.last <= last) {
    if (pair !== undefined) bad(`--master/--slave only name the hosts of new shards past ${last}; ${spanText(span)} already exist (use topology split to move them)`);
    return { ...json, ranges: carveSpan(json.ranges, span, (r) => ({ ...r, open })) };
  }
  if (pair === undefined) bad(`shards ${spanText(span)} go past the last shard of the map, ${last}: adding shards needs --master (and --slave) for them`);
  checkPair(pair);
  if (span.first > last + 1) bad(`shards ${last + 1}..${span.first - 1} would be left uncovered: start the range at ${last + 1}`);
  const existing = span.first <= last ? carveSpan(json.ranges, { first: span.first, last }, (r) => ({ ...r, open })) : json.ranges;
  const added: ShardRange = { range: [last + 1, span.last], master: pair.master, ...(pair.slave !== undefined ? { slave: pair.slave } : {}), open };
  return { ...json, ranges: mergeAdjacent([...existing, added]) };
}

/** One changed span in a readable diff: what served it before and after (undefined: not in that map). */
export interface RangeChange {
  fleet: Fleet;
  range: [number, number];
  before?: ShardRange;
  after?: ShardRange;
}

const sameServing = (a: ShardRange | undefined, b: ShardRange | undefined): boolean =>
  a?.master === b?.master && a?.slave === b?.slave && a?.open === b?.open && a?.frozen?.id === b?.frozen?.id;

function diffRanges(fleet: Fleet, before: readonly ShardRange[], after: readonly ShardRange[]): RangeChange[] {
  const cuts = new Set<number>();
  for (const r of [...before, ...after]) {
    cuts.add(r.range[0]);
    cuts.add(r.range[1] + 1);
  }
  const points = [...cuts].sort((a, b) => a - b);
  const at = (ranges: readonly ShardRange[], shard: number) => ranges.find((r) => r.range[0] <= shard && shard <= r.range[1]);
  const out: RangeChange[] = [];
  for (let i = 0; i + 1 < points.length; i++) {
    const lo = points[i]!;
    const hi = points[i + 1]! - 1;
    const b = at(before, lo);
    const a = at(after, lo);
    if (sameServing(a, b)) continue;
    const prev = out[out.length - 1];
    if (prev && prev.range[1] + 1 === lo && sameServing(prev.before, b) && sameServing(prev.after, a)) prev.range = [prev.range[0], hi];
    else out.push({ fleet, range: [lo, hi], ...(b ? { before: b } : {}), ...(a ? { after: a } : {}) });
  }
  return out;
}

/** The spans whose master, slave or open flag differ between two maps, object shards first. */
export function diffShardMaps(before: ShardMapJson, after: ShardMapJson): RangeChange[] {
  return [...diffRanges('objects', before.ranges, after.ranges), ...diffRanges('mod', before.modShards.ranges, after.modShards.ranges)];
}

const serving = (r: ShardRange | undefined, fleet: Fleet): string => {
  if (r === undefined) return '(none)';
  const hosts = `${r.master}/${r.slave ?? '-'}`;
  const frozen = r.frozen === undefined ? '' : ` frozen by ${r.frozen.id}`;
  return fleet === 'objects' ? `${hosts} ${r.open ? 'open' : 'closed'}${frozen}` : hosts;
};

/** One line per changed span: `object shards 0..255: A/B open -> C/D open`. */
export function formatShardMapDiff(changes: readonly RangeChange[]): string {
  if (changes.length === 0) return 'no change';
  return changes
    .map((c) => `${c.fleet === 'objects' ? 'object' : 'mod'} shards ${spanText({ first: c.range[0], last: c.range[1] })}: ${serving(c.before, c.fleet)} -> ${serving(c.after, c.fleet)}`)
    .join('\n');
}
