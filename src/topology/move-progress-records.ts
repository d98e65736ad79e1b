import { MOVE_ID_PATTERN, moveProgressSchema, type MoveProgress, type ShardMapJson } from './shard-map.js';
import type { RecordKind, RecordSet } from './record-set.js';

/**
 * Move progress (rows, bytes, lag) kept beside the shard map, one record per move (#30). It
 * changes every second of a move, so it must not be in what services watch: a write here never
 * makes a new map version. Only people read it (the dashboard, `topology show`), and nothing
 * checks it before a compare-and-set, so a lost or stale record costs a stale number, never a route.
 */
export type MoveProgressRecords = RecordSet<MoveProgress>;

/** A record per move id (ids are already [a-z0-9-], so the name check only guards a caller's typo). */
export const moveProgressKind: RecordKind<MoveProgress> = {
  what: 'move progress record',
  namePattern: MOVE_ID_PATTERN,
  schema: moveProgressSchema as unknown as RecordKind<MoveProgress>['schema'],
};

/**
 * The map's JSON with each move's progress taken from `records` (the view the dashboard and
 * `topology show --json` print). A record for a move that is gone is left out; progress a map
 * of the old layout still carries inline is kept unless a record replaces it.
 */
export function withMoveProgress(json: ShardMapJson, records: ReadonlyMap<string, MoveProgress>): ShardMapJson {
  if (json.moves === undefined || records.size === 0) return json;
  return { ...json, moves: json.moves.map((m) => {
    const p = records.get(m.id);
    return p === undefined ? m : { ...m, progress: { ...p } };
  }) };
}
