import { ShardKitError } from '../../errors.js';
import type { ShardMap } from '../../topology/shard-map.js';

/** One range of the map at backup time: its shards and the pair (master, slave) that served them. */
export interface LayoutRange {
  range: [number, number];
  master: string;
  slave?: string;
}

/** Which pair served which shards when the backup was taken (the map's ranges, nothing else). */
export interface ShardLayout {
  objects: LayoutRange[];
  modShards: LayoutRange[];
}

/** A span of shards whose backed-up copy sits in `backup`'s unit while `now` serves them. */
export interface MovedSpan {
  fleet: 'objects' | 'modShards';
  first: number;
  last: number;
  /** The pair's master at backup time (the unit whose copy holds these shards). */
  backup: string;
  /** The master that serves them now. */
  now: string;
}

const strip = (r: { range: [number, number]; master: string; slave?: string }): LayoutRange => ({ range: [r.range[0], r.range[1]], master: r.master, ...(r.slave !== undefined ? { slave: r.slave } : {}) });

/** The layout recorded in a new backup's manifest. */
export function shardLayout(map: ShardMap): ShardLayout {
  const json = map.toJSON();
  return { objects: json.ranges.map(strip), modShards: json.modShards.ranges.map(strip) };
}

/**
 * The master a full restore puts unit `unit`'s copy on: the pair that names it now, master or
 * slave (after a failover the old master is the slave), matched as fleet-pairs.ts `pairNow` does;
 * undefined when no range names it any more.
 */
function restoredOnto(map: ShardMap, unit: string): string | undefined {
  const json = map.toJSON();
  return [...json.ranges, ...json.modShards.ranges].find((r) => r.master === unit || r.slave === unit)?.master;
}

/**
 * The spans of shards (object and mod shards) whose backed-up copy a full restore would load on
 * another pair than the one serving them now: moved after the backup. A failover (same shards,
 * the slave promoted) is not a move: the restore follows the pair.
 */
export function movedSinceBackup(layout: ShardLayout, map: ShardMap): MovedSpan[] {
  const out: MovedSpan[] = [];
  const json = map.toJSON();
  for (const fleet of ['objects', 'modShards'] as const) {
    const live = fleet === 'objects' ? json.ranges : json.modShards.ranges;
    for (const r of layout[fleet]) {
      const onto = restoredOnto(map, r.master);
      for (const l of live) {
        const first = Math.max(r.range[0], l.range[0]);
        const last = Math.min(r.range[1], l.range[1]);
        if (first <= last && l.master !== onto) out.push({ fleet, first, last, backup: r.master, now: l.master });
      }
    }
  }
  return out.sort((a, b) => (a.fleet === b.fleet ? a.first - b.first : a.fleet === 'objects' ? -1 : 1));
}

const span = (m: MovedSpan) => `${m.fleet === 'objects' ? 'shards' : 'mod shards'} ${m.first === m.last ? m.first : `${m.first}..${m.last}`} (${m.backup} then, ${m.now} now)`;

/**
 * A full restore refuses (VERSION_CONFLICT, before anything changes) when shards moved to
 * another pair since the backup: each pair's copy would be loaded on the pair that holds its
 * old ranges now, so the moved shards would keep their newer rows and stale copies of them would
 * reappear on the old pair (undoing the move's fence). Manifests written before the layout was
 * recorded carry none: they are restored as before (their map version alone cannot tell a move
 * from a failover, which changes the version too).
 */
export function refuseMovedShards(manifest: { id: string; mapVersion?: number; layout?: ShardLayout }, map: ShardMap): void {
  if (manifest.layout === undefined) return;
  const moved = movedSinceBackup(manifest.layout, map);
  if (moved.length === 0) return;
  const first = moved[0]!;
  const obj = moved.find((m) => m.fleet === 'objects');
  const hint = obj !== undefined
    ? `restore them alone with \`backup restore --shards ${obj.first}..${obj.last}\` (in place on ${obj.now}, or \`--into\` a spare pair), or move them back to ${obj.backup} (\`shards move ${obj.first}..${obj.last} --to ${obj.backup}\`) before a full restore`
    : `move them back to ${first.backup} before a full restore`;
  throw new ShardKitError('VERSION_CONFLICT', `backup ${manifest.id} (map version ${manifest.mapVersion}) does not match the map now (version ${map.version}): ${moved.slice(0, 3).map(span).join(', ')}${moved.length > 3 ? ` and ${moved.length - 3} more span(s)` : ''} moved since; a full restore would load their old rows on the old pair: ${hint}: nothing changed`, {
    details: { expectedVersion: manifest.mapVersion, actualVersion: map.version, moved },
  });
}
