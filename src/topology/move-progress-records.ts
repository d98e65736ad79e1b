import { ShardKitError } from '../errors.js';
import { MOVE_ID_PATTERN, moveProgressSchema, type MoveProgress, type ShardMapJson } from './shard-map.js';

/**
 * Move progress (rows, bytes, lag) kept beside the shard map, one record per move (#30). It
 * changes every second of a move, so it must not be in what services watch: a write here never
 * makes a new map version. Only people read it (the dashboard, `topology show`), and nothing
 * checks it before a compare-and-set, so a lost or stale record costs a stale number, never a route.
 */
export interface MoveProgressRecords {
  /** Every move's latest progress, by move id. A record that does not parse is INVALID_CONFIG naming it. */
  readAll(): Promise<Map<string, MoveProgress>>;
  /** Replaces move `id`'s record (last writer wins: one mover per move). */
  put(id: string, progress: MoveProgress): Promise<void>;
  /** Removes move `id`'s record; removing a missing one is not an error. */
  remove(id: string): Promise<void>;
}

/** A move id as a record name: ids are already [a-z0-9-], so this only guards a caller's typo. */
export function checkProgressId(id: string): string {
  if (typeof id !== 'string' || !MOVE_ID_PATTERN.test(id)) throw new ShardKitError('INVALID_ARGUMENT', `not a move id: ${JSON.stringify(id)}`);
  return id;
}

/** Parses one stored record; `where` names it in the error (a file path, an etcd key). */
export function parseProgressRecord(text: string, where: string): MoveProgress {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new ShardKitError('INVALID_CONFIG', `move progress record ${where} is not valid JSON: ${(err as Error).message}`);
  }
  const parsed = moveProgressSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new ShardKitError('INVALID_CONFIG', `move progress record ${where}: ${issue.path.join('.') || '(root)'}: ${issue.message}`);
  }
  return parsed.data as MoveProgress;
}

/** Records kept in memory (shared through a MemoryTopologyBacking). */
export class MemoryMoveProgressRecords implements MoveProgressRecords {
  private readonly records = new Map<string, MoveProgress>();

  async readAll(): Promise<Map<string, MoveProgress>> {
    return new Map([...this.records].map(([id, p]) => [id, { ...p }]));
  }

  async put(id: string, progress: MoveProgress): Promise<void> {
    this.records.set(checkProgressId(id), parseProgressRecord(JSON.stringify(progress), `for move ${id}`));
  }

  async remove(id: string): Promise<void> {
    this.records.delete(checkProgressId(id));
  }
}

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
