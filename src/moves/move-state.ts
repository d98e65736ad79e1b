import { isShardKitError, ShardKitError } from '../errors.js';
import { carveSpan, refuseMoving, type ShardSpan } from '../topology/map-edits.js';
import { MOVE_ID_PATTERN, ShardMap, type HostPair, type MovePhase, type MoveRecord, type RangeFreeze, type ShardMapJson, type ShardRange } from '../topology/shard-map.js';
import type { TopologyStore } from '../topology/topology-store.js';
import { activeFreeze } from '../topology/range-freeze.js';

/**
 * A move is a state of the shard map (SPEC §5, docs/moves.md). This file holds the pure
 * transitions of that state, each of which checks its own precondition on the map it is given,
 * and casMoveState(), which applies one to the topology store with compare-and-set.
 *
 *   addMove        -> record {phase: started}; the range is now off limits to map edits
 *   advanceMove    -> phase started -> copied (and detail such as positions), checked order
 *   freezeMove     -> range carved out and `frozen` (services hold writes up to holdMs)
 *   advanceMove    -> frozen -> fenced
 *   switchMove     -> THE cutover: precondition "frozen by this move, still on the source"
 *   abortMove      -> before the switch only: freeze lifted, record removed, source serves
 *   forgetMove     -> after the switch: record removed (shards drop-moved)
 *
 * Other tools (failover, issue #18) reuse the same freeze with kind 'failover': addMove,
 * freezeMove, their own work, switchMove (which names the target pair the range's new hosts),
 * or abortMove. Services only look at ShardRange.frozen through activeFreeze().
 */

export const DEFAULT_HOLD_MS = 400;

export { activeFreeze };

export interface AddMoveOptions {
  span: ShardSpan;
  target: HostPair;
  id?: string;
  kind?: 'move' | 'failover';
  holdMs?: number;
  /** Host names the target may use (a config's `hosts`); undefined: not checked. */
  hosts?: Iterable<string>;
  now?: number;
}

function bad(message: string): never {
  throw new ShardKitError('INVALID_ARGUMENT', message);
}

const spanText = (s: { first: number; last: number }): string => (s.first === s.last ? `${s.first}` : `${s.first}..${s.last}`);

/** A fresh move id: readable, sortable by time, unique enough for one map. */
export function newMoveId(span: ShardSpan, now: number = Date.now()): string {
  return `move-${span.first}-${span.last}-${now.toString(36)}`;
}

/** The move with this id, or UNKNOWN_MOVE. */
export function requireMove(map: ShardMap, id: string): MoveRecord {
  const m = typeof id === 'string' ? map.move(id) : undefined;
  if (m === undefined) throw new ShardKitError('UNKNOWN_MOVE', `no move ${JSON.stringify(String(id).slice(0, 80))} is recorded in the shard map (version ${map.version})`);
  return m;
}

/** Records a new move of `span` (which must lie inside one range) to `target`. */
/** How long past its hold budget a failover's record counts as under way for a move's start (a failover waits up to 30 s for its slave by default). */
export const FAILOVER_UNDER_WAY_MS = 120_000;

export function addMove(map: ShardMap, options: AddMoveOptions): ShardMapJson {
  const { span, target } = options;
  const now = options.now ?? Date.now();
  if (!Number.isInteger(span.first) || !Number.isInteger(span.last) || span.first < 0 || span.first > span.last) bad(`bad shard range ${spanText(span)}`);
  const home = map.rangeOf(span.first);
  if (home === undefined || span.last >= map.shardCount) {
    throw new ShardKitError('UNKNOWN_SHARD', `shards ${spanText(span)} are not all in the shard map (0..${map.shardCount - 1})`);
  }
  if (span.last > home.range[1]) {
    bad(`shards ${spanText(span)} cross a range boundary (${home.range[0]}..${home.range[1]} on ${home.master} ends at ${home.range[1]}): move one range at a time`);
  }
  const id = options.id ?? newMoveId(span, now);
  if (!MOVE_ID_PATTERN.test(id)) bad(`move id ${JSON.stringify(id.slice(0, 80))} is not 1-64 of [a-z0-9-]`);
  if (map.move(id) !== undefined) throw new ShardKitError('ALREADY_EXISTS', `move ${id} is already recorded in the shard map`);
  if (typeof target?.master !== 'string') bad('the target needs a master host');
  if (target.slave !== undefined && target.slave === target.master) bad(`the target's master and slave are both ${target.master}`);
  const source: HostPair = home.slave === undefined ? { master: home.master } : { master: home.master, slave: home.slave };
  const sourceHosts = [source.master, source.slave].filter((h) => h !== undefined);
  // A failover's target is the source pair turned round (its slave becomes master): the only
  // case where the target may name the source's hosts.
  const swapped = options.kind === 'failover' && target.master === source.slave && (target.slave === undefined || target.slave === source.master);
  if (options.kind === 'failover' && !swapped) bad(`a failover's target must be the source pair turned round (${source.slave ?? '-'}/${source.master}), got ${target.master}/${target.slave ?? '-'}`);
  if (!swapped) for (const h of [target.master, target.slave]) {
    if (h !== undefined && sourceHosts.includes(h)) bad(`the target ${h} is a host of the source pair ${source.master}/${source.slave ?? '-'}: move to another pair`);
  }
  if (options.hosts !== undefined) {
    const declared = new Set(options.hosts);
    for (const h of [target.master, target.slave]) {
      if (h !== undefined && !declared.has(h)) bad(`unknown host ${h}: it is not declared in the config's "hosts" (declared: ${[...declared].slice(0, 12).join(', ')})`);
    }
  }
  refuseMoving(map, span);
  if (options.kind !== 'failover') {
    // A planned failover of the target pair under way (its record younger than its budget and
    // the slave's catch-up time; one left by a crashed failover stops counting then): the copy
    // would land on a master being fenced.
    const failing = map.moves().find((m) => m.kind === 'failover' && (m.source.master === target.master || m.target.master === target.master) && now < m.updatedAt + m.holdMs + FAILOVER_UNDER_WAY_MS);
    if (failing !== undefined) throw new ShardKitError('VERSION_CONFLICT', `the target ${target.master} is failing over (${failing.id}): move once the failover is done, to the pair's master then`, { details: { moveId: failing.id } });
  }
  const holdMs = options.holdMs ?? DEFAULT_HOLD_MS;
  if (!Number.isInteger(holdMs) || holdMs < 1 || holdMs > 60_000) bad(`the hold budget must be 1..60000 ms, got ${holdMs}`);
  const record: MoveRecord = {
    id, kind: options.kind ?? 'move', range: [span.first, span.last], source, target: { ...target },
    phase: 'started', holdMs, startedAt: now, updatedAt: now,
  };
  const json = map.toJSON();
  return { ...json, moves: [...(json.moves ?? []), record] };
}

function replaceMove(json: ShardMapJson, id: string, edit: (m: MoveRecord) => MoveRecord | undefined): ShardMapJson {
  const moves = (json.moves ?? []).flatMap((m) => {
    if (m.id !== id) return [m];
    const next = edit(m);
    return next === undefined ? [] : [next];
  });
  // Everything else the map carries (a read-only mark) stays: failovers edit through here too.
  const { moves: _replaced, ...rest } = json;
  return moves.length > 0 ? { ...rest, moves } : rest;
}

/** Moves a record from one of `from` to `to`, merging `detail`. Idempotent when already at `to`. */
export function advanceMove(map: ShardMap, id: string, from: readonly MovePhase[], to: MovePhase, detail: MoveRecord['detail'] = undefined, now = Date.now()): ShardMapJson {
  const m = requireMove(map, id);
  if (m.phase !== to && !from.includes(m.phase)) {
    throw new ShardKitError('VERSION_CONFLICT', `move ${id} is in phase ${m.phase}, not ${from.join(' or ')}: someone else changed it`, { details: { moveId: id, phase: m.phase } });
  }
  return replaceMove(map.toJSON(), id, (r) => ({ ...r, phase: to, updatedAt: now, ...(detail !== undefined ? { detail: { ...r.detail, ...detail } } : {}) }));
}

function onSource(map: ShardMap, m: MoveRecord): boolean {
  for (let s = m.range[0]; s <= m.range[1]; ) {
    const r = map.rangeOf(s);
    if (r === undefined || r.master !== m.source.master) return false;
    s = r.range[1] + 1;
  }
  return true;
}

/**
 * Failover edits carry a move's record untouched (map-edits.ts withPairRanges), so a failover of
 * the target pair, planned or emergency, leaves a record naming the old target master, which now
 * serves the pair as its slave or not at all while the copy is on it: the range must never switch
 * there. The map shows it: the target's slave masters ranges, or its master is a slave. Failover
 * records are exempt: their target is their source turned round by design.
 */
export function refuseTurnedTarget(map: ShardMap, m: MoveRecord, what: string): void {
  if (m.kind !== 'move') return;
  const { master, slave } = m.target;
  const promoted = slave !== undefined && (map.rangesOf(slave).length > 0 || map.modShardRanges().some((r) => r.master === slave));
  const demoted = map.objectRanges().some((r) => r.slave === master) || map.modShardRanges().some((r) => r.slave === master);
  if (!promoted && !demoted) return;
  throw new ShardKitError(
    'VERSION_CONFLICT',
    `move ${m.id} cannot ${what}: its target pair ${master}/${slave ?? '-'} was failed over since the move started (${promoted ? `${slave} is a master` : `${master} is a slave`} in map version ${map.version}) and its range never switches to a host failed away from; once the move is aborted (the mover does it, else shards move --abort), move again to the pair's master`,
    { details: { moveId: m.id } },
  );
}

/**
 * Freezes the move's range (phase copied -> frozen). Again on a frozen move: a fresh frozenAt
 * (a resumed mover re-freezes instead of relying on an expired freeze).
 */
export function freezeMove(map: ShardMap, id: string, now = Date.now(), from: readonly MovePhase[] = ['copied']): ShardMapJson {
  const m = requireMove(map, id);
  if (m.phase !== 'frozen' && m.phase !== 'fenced' && !from.includes(m.phase)) {
    throw new ShardKitError('VERSION_CONFLICT', `move ${id} is in phase ${m.phase}: it can only be frozen from ${from.join(' or ')}`, { details: { moveId: id, phase: m.phase } });
  }
  if (!onSource(map, m)) throw new ShardKitError('VERSION_CONFLICT', `shards ${spanText({ first: m.range[0], last: m.range[1] })} are no longer all on ${m.source.master}: move ${id} cannot freeze them`);
  refuseTurnedTarget(map, m, 'freeze');
  const freeze: RangeFreeze = { id, source: m.source, target: m.target, frozenAt: now, holdMs: m.holdMs };
  const json = map.toJSON();
  const ranges = carveSpan(json.ranges, { first: m.range[0], last: m.range[1] }, (r) => ({ ...r, frozen: freeze }));
  const phase: MovePhase = m.phase === 'fenced' ? 'fenced' : 'frozen';
  return replaceMove({ ...json, ranges }, id, (r) => ({ ...r, phase, updatedAt: now }));
}

/**
 * The cutover compare-and-set body: only when the range is still frozen by this move and still
 * on its source does it name the target pair. It never re-applies on a map that moved on: a
 * switched move is reported as done (idempotent resume), anything else is VERSION_CONFLICT.
 */
export function switchMove(map: ShardMap, id: string, now = Date.now()): ShardMapJson {
  const m = requireMove(map, id);
  if (m.phase === 'switched') return map.toJSON();
  const span = { first: m.range[0], last: m.range[1] };
  const r = map.rangeOf(span.first);
  if (r?.frozen?.id !== id || r.range[0] !== span.first || r.range[1] !== span.last || r.master !== m.source.master) {
    throw new ShardKitError('VERSION_CONFLICT', `shards ${spanText(span)} are not frozen by move ${id} on ${m.source.master} any more: the cutover is refused`, { details: { moveId: id } });
  }
  if (m.phase !== 'fenced') throw new ShardKitError('VERSION_CONFLICT', `move ${id} is in phase ${m.phase}: the cutover needs the source fenced first`, { details: { moveId: id, phase: m.phase } });
  refuseTurnedTarget(map, m, 'switch');
  const json = map.toJSON();
  const toTarget = (x: ShardRange): ShardRange => {
    const out: ShardRange = { range: x.range, master: m.target.master };
    if (m.target.slave !== undefined) out.slave = m.target.slave;
    if (x.open !== undefined) out.open = x.open;
    return out;
  };
  const ranges = carveSpan(json.ranges, span, toTarget);
  // A move that carried mod shards (MyRocks wide-column databases and the lookup tables beside
  // them: detail.modShards, set by the engine's copy) switches the mod shards of the span that
  // the source masters in the same compare-and-set; the others stay where they are.
  const modShards = m.detail?.modShards !== true || span.first >= json.modShards.count ? json.modShards : {
    count: json.modShards.count,
    ranges: carveSpan(json.modShards.ranges, { first: span.first, last: Math.min(span.last, json.modShards.count - 1) }, (x) => (x.master === m.source.master ? toTarget(x) : x)),
  };
  return replaceMove({ ...json, ranges, modShards }, id, (x) => ({ ...x, phase: 'switched', updatedAt: now }));
}

/**
 * The move with its source pair as the map names it now. A source pair failed over while the move
 * was being aborted (its master died: promoteSlave allows that once the move is 'aborting') is
 * undone on its new master, which holds what the old one replicated (a fence's renames included).
 */
export function asMappedSource(map: ShardMap, m: MoveRecord): MoveRecord {
  const r = map.rangeOf(m.range[0]);
  if (r === undefined || r.master === m.source.master) return m;
  return { ...m, source: { master: r.master, ...(r.slave !== undefined ? { slave: r.slave } : {}) } };
}

/** Marks a move as being aborted (before its engine undoes the fence): from then on it can never switch. */
export function beginAbort(map: ShardMap, id: string, now = Date.now(), reason?: string): ShardMapJson {
  const m = requireMove(map, id);
  if (m.phase === 'switched') throw new ShardKitError('VERSION_CONFLICT', `move ${id} has already switched to ${m.target.master}: it cannot be aborted (move the shards back instead)`, { details: { moveId: id } });
  // Why, in the record the dashboard and `topology show` read while the abort runs (#28).
  const detail = reason === undefined || m.detail?.abortReason !== undefined ? undefined : { abortReason: reason.slice(0, 4096) };
  return advanceMove(map, id, ['started', 'copied', 'frozen', 'fenced'], 'aborting', detail, now);
}

/**
 * Every move of shards `master` serves that has not switched, marked 'aborting' (the supervisor,
 * before it fails a dead master over): none can switch from here, and promoteSlave lets the pair
 * fail over. The engines' undo is left to `shards move --abort`, which then runs on the new master.
 * Returns the map unchanged (and no ids) when there is none.
 */
export function abortMovesFrom(map: ShardMap, master: string, reason: string, now = Date.now()): { json: ShardMapJson; ids: string[] } {
  let current = map;
  const ids: string[] = [];
  for (const m of map.moves()) {
    if (m.kind !== 'move' || m.phase === 'switched' || m.phase === 'aborting' || map.rangeOf(m.range[0])?.master !== master) continue;
    current = ShardMap.fromJSON(beginAbort(current, m.id, now, reason));
    ids.push(m.id);
  }
  return { json: current.toJSON(), ids };
}

/** Before the switch: lifts the freeze and forgets the move, so the source serves as before. */
export function abortMove(map: ShardMap, id: string): ShardMapJson {
  const m = requireMove(map, id);
  if (m.phase === 'switched') throw new ShardKitError('VERSION_CONFLICT', `move ${id} has already switched to ${m.target.master}: it cannot be aborted (move the shards back instead)`, { details: { moveId: id } });
  const json = map.toJSON();
  const ranges = carveSpan(json.ranges, { first: m.range[0], last: m.range[1] }, (r) => {
    if (r.frozen?.id !== id) return r;
    const { frozen: _frozen, ...rest } = r;
    return rest;
  });
  return replaceMove({ ...json, ranges }, id, () => undefined);
}

/** After the switch (and the source's copy dropped): forgets the move. */
export function forgetMove(map: ShardMap, id: string): ShardMapJson {
  const m = requireMove(map, id);
  if (m.phase !== 'switched') throw new ShardKitError('VERSION_CONFLICT', `move ${id} is in phase ${m.phase}, not switched`, { details: { moveId: id } });
  return replaceMove(map.toJSON(), id, () => undefined);
}

export interface CasOptions {
  hosts?: Iterable<string>;
  /** Rounds against concurrent writers (each re-checks the precondition on the newer map). Default 5. */
  attempts?: number;
}

/**
 * Applies `transition` with compare-and-set. On VERSION_CONFLICT it reads the newer map and runs
 * the transition again, which re-checks its precondition there: never a blind retry.
 */
export async function casMoveState(store: TopologyStore, transition: (map: ShardMap) => ShardMapJson, options: CasOptions = {}): Promise<ShardMap> {
  const attempts = options.attempts ?? 5;
  for (let attempt = 1; ; attempt++) {
    const current = await store.read();
    if (current === undefined) throw new ShardKitError('INVALID_ARGUMENT', 'the topology store holds no shard map: start a service or run a topology command first');
    const json = transition(current);
    const next = ShardMap.fromJSON({ ...json, version: current.version }, options.hosts === undefined ? {} : { hosts: options.hosts });
    if (JSON.stringify(next.toJSON()) === JSON.stringify(current.toJSON())) return current;
    try {
      return await store.write(next, current.version);
    } catch (err) {
      if (!isShardKitError(err, 'VERSION_CONFLICT') || attempt >= attempts) throw err;
    }
  }
}

/**
 * abortMovesFrom as one compare-and-set on `store` (heal, before it fails a dead master over).
 * Through casMoveState, not changeShardMap: that one writes only when ranges change, and a move's
 * phase is no range, so the marks were computed, reported and never written.
 */
export async function casAbortMovesFrom(store: TopologyStore, master: string, reason: string): Promise<string[]> {
  if ((await store.read()) === undefined) return [];
  let ids: string[] = [];
  await casMoveState(store, (map) => {
    const out = abortMovesFrom(map, master, reason);
    ids = out.ids;
    return out.json;
  });
  return ids;
}
