import { ShardKitError } from '../../errors.js';
import type { ShardMap } from '../../topology/shard-map.js';
import type { BackupUnitSource } from './backup-engine.js';

/**
 * The pairs of the map, each to be read from its slave. Refuses while a shard move or a failover is in progress
 * (its target holds a half copy; the ranges it switches would be in two backups or none) and when
 * a pair has no slave (a backup never loads a master).
 */
export function fleetPairs(map: ShardMap): BackupUnitSource[] {
  refuseMovesInProgress(map);
  const json = map.toJSON();
  const pairs = new Map<string, string | undefined>();
  for (const r of [...json.ranges, ...json.modShards.ranges]) pairs.set(r.master, r.slave);
  const out: BackupUnitSource[] = [];
  for (const [master, slave] of [...pairs].sort(([a], [b]) => a.localeCompare(b))) {
    if (slave === undefined) throw new ShardKitError('PRECONDITION_FAILED', `${master} has no slave: backups are taken from slaves (build one with \`shardkit pair rebuild-slave ${master} --slave HOST\`): nothing written`);
    out.push({ unit: master, source: slave });
  }
  return out;
}

/** The pair that holds a backed-up unit's ranges now (after a failover its old master may be the slave). */
export function pairNow(map: ShardMap, unit: string): { master: string; slave?: string } {
  const json = map.toJSON();
  for (const r of [...json.ranges, ...json.modShards.ranges]) {
    if (r.master === unit || r.slave === unit) return { master: r.master, ...(r.slave !== undefined ? { slave: r.slave } : {}) };
  }
  throw new ShardKitError('NOT_FOUND', `the backup's pair ${unit} holds no range in the shard map (version ${map.version}): restore it --into a pair`);
}

/** PRECONDITION_FAILED naming each move or failover recorded in the map: their ranges would be in two backups or none. */
export function refuseMovesInProgress(map: ShardMap): void {
  // A failover is recorded as a move of kind 'failover': the operator is told which one waits.
  const moves = map.moves();
  if (moves.length > 0) throw new ShardKitError('PRECONDITION_FAILED', `${moves.map((m) => `${m.kind === 'failover' ? 'a failover' : 'a shard move'} (${m.id}, ${m.source.master} -> ${m.target.master}, ${m.phase})`).join(' and ')} is in progress at map version ${map.version}: back up after it finished${moves.some((m) => m.phase === 'switched') ? ' (a switched move ends with `shardkit shards drop-moved`)' : ''}: nothing written`);
}
