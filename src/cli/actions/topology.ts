import { readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { parseConfig } from '../../config/config.js';
import { ShardKitError } from '../../errors.js';
import { changeShardMap } from '../../topology/change-shard-map.js';
import { createTopologyStore, FileTopologyStore, type EtcdTopologyStore } from '../../topology/index.js';
import { formatShardMapDiff, moveShards, parseShardSpan, promoteSlave, setOpen } from '../../topology/map-edits.js';
import type { TopologyStore } from '../../topology/topology-store.js';
import { withMoveProgress } from '../../topology/move-progress-records.js';
import { defaultShardMapJson, ShardMap, type ShardMapJson, type ShardRange } from '../../topology/shard-map.js';
import { withHostRecords } from '../../ops/fleet-hosts.js';
import { textTable } from '../text-table.js';

/** A JSON file's value; an unreadable file is INVALID_ARGUMENT, bad JSON INVALID_CONFIG, both naming it. */
async function readJsonFile(path: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new ShardKitError('INVALID_ARGUMENT', `cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new ShardKitError('INVALID_CONFIG', `${path} is not valid JSON: ${(err as Error).message}`);
  }
}

/**
 * Reads a shard map from a topology JSON file (the store's file, `topology show --json` output)
 * or from a whole shardkit config file: the live map in its topology store when one was written
 * there (`dataDir`, default the config's directory), else the config's `shardMap` seed.
 */
export async function loadShardMapFile(path: string, dataDir?: string): Promise<ShardMap> {
  const json = await readJsonFile(path);
  const prefixed = <T>(fn: () => T): T => {
    try {
      return fn();
    } catch (err) {
      if (err instanceof ShardKitError) throw new ShardKitError(err.code, `${path}: ${err.message}`, { cause: err });
      throw err;
    }
  };
  if (json !== null && typeof json === 'object' && !Array.isArray(json) && 'shardMap' in json) {
    const config = prefixed(() => parseConfig(json));
    // The config's shardMap only seeds the topology store; once a service has run, the store
    // holds the live map (possibly a later version), which is what an operator wants to see:
    // a file or etcd store (a memory store lives in its process only).
    if (config.topologyStore.kind !== 'memory') {
      const store = createTopologyStore(config.topologyStore, { dataDir: dataDir ?? dirname(path) });
      try {
        const live = await store.read();
        // Move progress lives beside the map (#30); the operator sees it merged into the moves.
        if (live !== undefined) return live.moves().length === 0 ? live : ShardMap.fromJSON(withMoveProgress(live.toJSON(), (await store.progress?.readAll()) ?? new Map()));
      } finally {
        await store.close();
      }
    }
    return prefixed(() => ShardMap.fromJSON(config.shardMap));
  }
  return prefixed(() => ShardMap.fromJSON(json));
}

const rangeText = (r: ShardRange): string => (r.range[0] === r.range[1] ? `${r.range[0]}` : `${r.range[0]}..${r.range[1]}`);

/** Past this many object ranges, `topology show` sums them up by pair unless asked for --ranges. */
export const SUMMARY_AFTER_RANGES = 200;

/** One row per master: its ranges, shards, open shards, first and last shard (a map at moon size). */
function pairSummary(objects: readonly ShardRange[]): string {
  const rows = new Map<string, { slave: string; ranges: number; shards: number; open: number; first: number; last: number; frozen: number }>();
  for (const r of objects) {
    const n = r.range[1] - r.range[0] + 1;
    const row = rows.get(r.master) ?? { slave: r.slave ?? '-', ranges: 0, shards: 0, open: 0, first: r.range[0], last: r.range[1], frozen: 0 };
    row.ranges++;
    row.shards += n;
    if (r.open) row.open += n;
    if (r.frozen !== undefined) row.frozen++;
    row.last = Math.max(row.last, r.range[1]);
    rows.set(r.master, row);
  }
  return textTable(['MASTER', 'SLAVE', 'RANGES', 'SHARDS', 'OPEN', 'FIRST..LAST', 'FROZEN'],
    [...rows].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([m, r]) => [m, r.slave, String(r.ranges), String(r.shards), String(r.open), `${r.first}..${r.last}`, r.frozen === 0 ? '-' : String(r.frozen)]));
}

export function formatShardMapTable(map: ShardMap, options: { ranges?: boolean } = {}): string {
  const objects = map.objectRanges();
  const mod = map.modShardRanges();
  const summarize = objects.length > SUMMARY_AFTER_RANGES && options.ranges !== true;
  return [
    `shard map version ${map.version}: ${map.shardCount} object shards (${map.openShardCount} open) on ${objects.length} ranges; ${map.modShardCount} mod shards`,
    '',
    summarize
      ? `${pairSummary(objects)}\n(${objects.length} ranges summed up by master; --ranges lists each)`
      : textTable(['RANGE', 'MASTER', 'SLAVE', 'OPEN'], objects.map((r) => [rangeText(r), r.master, r.slave ?? '-', r.open ? 'yes' : 'no'])),
    '',
    `mod shards (${map.modShardCount}):`,
    textTable(['RANGE', 'MASTER', 'SLAVE'], mod.map((r) => [rangeText(r), r.master, r.slave ?? '-'])),
    // Moves in progress (docs/moves.md): only when there are any, so the usual output is unchanged.
    ...(map.moves().length === 0 ? [] : [
      '',
      `moves (${map.moves().length}):`,
      textTable(['ID', 'RANGE', 'SOURCE', 'TARGET', 'PHASE', 'FROZEN'], map.moves().map((m) => {
        const frozen = map.rangeOf(m.range[0])?.frozen;
        return [m.id, `${m.range[0]}..${m.range[1]}`, `${m.source.master}/${m.source.slave ?? '-'}`, `${m.target.master}/${m.target.slave ?? '-'}`, m.phase,
          frozen?.id === m.id ? `since ${new Date(frozen.frozenAt).toISOString()} (hold ${frozen.holdMs} ms)` : '-'];
      })),
    ]),
  ].join('\n');
}

/** `topology show`: the map of --file, or the built-in default map. */
export async function showTopology(opts: { file?: string; json?: boolean; data?: string; ranges?: boolean }): Promise<void> {
  const map = opts.file === undefined ? ShardMap.fromJSON(defaultShardMapJson()) : await loadShardMapFile(opts.file, opts.data);
  process.stdout.write(`${opts.json ? JSON.stringify(map.toJSON()) : formatShardMapTable(map, { ranges: opts.ranges === true })}\n`);
}

/**
 * `topology upgrade`: a store's single document becomes records and a root (#30), for an etcd
 * store (EtcdTopologyStore.upgrade) or a file store (FileTopologyStore.upgrade). --file names a
 * config (its topology store; a file store is <data>/<path>) or a topology file itself.
 */
export async function upgradeTopology(opts: { file: string; data?: string; json?: boolean }): Promise<void> {
  const json = await readJsonFile(opts.file);
  const isConfig = json !== null && typeof json === 'object' && !Array.isArray(json) && 'shardMap' in json;
  if (!isConfig) {
    if (opts.data !== undefined) throw new ShardKitError('INVALID_ARGUMENT', `--data only applies to a config file; ${opts.file} is a topology file`);
    return upgradeFileStore(new FileTopologyStore({ path: opts.file }), opts.json === true);
  }
  let config;
  try {
    config = parseConfig(json);
  } catch (err) {
    if (err instanceof ShardKitError) throw new ShardKitError(err.code, `${opts.file}: ${err.message}`, { cause: err });
    throw err;
  }
  if (config.topologyStore.kind === 'file') {
    return upgradeFileStore(createTopologyStore(config.topologyStore, { dataDir: opts.data ?? dirname(opts.file) }) as FileTopologyStore, opts.json === true);
  }
  if (config.topologyStore.kind !== 'etcd') {
    throw new ShardKitError('INVALID_ARGUMENT', `${opts.file} keeps its shard map in a "${config.topologyStore.kind}" topology store, which lives in one process: nothing stored to upgrade`);
  }
  const store = createTopologyStore(config.topologyStore) as EtcdTopologyStore;
  try {
    const out = await store.upgrade();
    if (opts.json) process.stdout.write(`${JSON.stringify(out)}\n`);
    else if (out.upgraded) process.stdout.write(`upgraded etcd key ${store.key} to the record layout: shard map version ${out.version} in ${out.records} records; the old document is kept at ${out.copyKey}\n`);
    else if (out.layout === 0) process.stdout.write(`etcd key ${store.key} holds no shard map: nothing to upgrade (a first write creates the record layout)\n`);
    else process.stdout.write(`etcd key ${store.key} is already in the record layout (shard map version ${out.version}, ${out.records} records): nothing to do\n`);
  } finally {
    await store.close();
  }
}

async function upgradeFileStore(store: FileTopologyStore, json: boolean): Promise<void> {
  try {
    const out = await store.upgrade();
    if (json) process.stdout.write(`${JSON.stringify(out)}\n`);
    else if (out.upgraded) process.stdout.write(`upgraded topology file ${store.path} to the record layout: shard map version ${out.version} in ${out.records} records; the old document is kept at ${out.copyPath}\n`);
    else if (out.layout === 0) process.stdout.write(`topology file ${store.path} holds no shard map: nothing to upgrade (a first write creates the record layout)\n`);
    else process.stdout.write(`topology file ${store.path} is already in the record layout (shard map version ${out.version}, ${out.records} records): nothing to do\n`);
  } finally {
    await store.close();
  }
}

/** Where an edit command reads and writes the live map, and what the next map is checked against. */
interface EditTarget {
  store: TopologyStore;
  seed?: ShardMap;
  hosts?: string[];
  /** For messages: where new hosts must be declared. */
  configPath?: string;
}

/**
 * --file names a config file (its topology store, like `show`; the default file store is
 * <data>/topology.json) or a topology file itself (then that file is the store).
 */
async function openEditTarget(path: string | undefined, dataDir: string | undefined): Promise<EditTarget> {
  if (path === undefined) throw new ShardKitError('INVALID_ARGUMENT', '--file <config> is required: the shardkit config whose topology store holds the live map');
  const json = await readJsonFile(path);
  if (json !== null && typeof json === 'object' && !Array.isArray(json) && 'shardMap' in json) {
    let config;
    try {
      config = parseConfig(json);
    } catch (err) {
      if (err instanceof ShardKitError) throw new ShardKitError(err.code, `${path}: ${err.message}`, { cause: err });
      throw err;
    }
    if (config.topologyStore.kind === 'memory') {
      throw new ShardKitError('INVALID_ARGUMENT', `${path} keeps its shard map in a "memory" topology store, which only the process holding it can change`);
    }
    const store = createTopologyStore(config.topologyStore, { dataDir: dataDir ?? dirname(path) });
    // A host recorded with `topology hosts add` is as declared as one in the file (#28).
    const known = await withHostRecords(config, store);
    return { store, seed: ShardMap.fromJSON(config.shardMap), hosts: Object.keys(known.hosts), configPath: path };
  }
  if (dataDir !== undefined) throw new ShardKitError('INVALID_ARGUMENT', `--data only applies to a config file; ${path} is a topology file`);
  return { store: new FileTopologyStore({ path }) };
}

export interface EditOptions {
  file?: string;
  data?: string;
  dryRun?: boolean;
  json?: boolean;
}

/** Refuses hosts the config does not declare, saying how to declare them. */
function checkDeclared(target: EditTarget, hosts: Array<string | undefined>): void {
  if (target.hosts === undefined) return;
  const missing = hosts.filter((h): h is string => h !== undefined && !target.hosts!.includes(h));
  if (missing.length === 0) return;
  const entries = missing.map((h) => `"${h}": {}`).join(', ');
  throw new ShardKitError(
    'INVALID_ARGUMENT',
    `host ${missing.join(', ')} ${missing.length > 1 ? 'are' : 'is'} not declared in "hosts" of ${target.configPath}: add ${entries} there (with "host"/"port" for a SQL server) or record it with \`shardkit topology hosts add\`, then run this again`,
  );
}

async function runEdit(opts: EditOptions, newHosts: Array<string | undefined>, change: (current: ShardMap) => ShardMapJson): Promise<{ before: ShardMap }> {
  const target = await openEditTarget(opts.file, opts.data);
  try {
    checkDeclared(target, newHosts);
    const result = await changeShardMap(target.store, change, {
      ...(target.seed ? { seed: target.seed } : {}),
      ...(target.hosts ? { hosts: target.hosts } : {}),
      dryRun: opts.dryRun === true,
    });
    if (opts.json) {
      process.stdout.write(`${JSON.stringify(result.after.toJSON())}\n`);
      return result;
    }
    const outcome = result.written
      ? `wrote shard map version ${result.after.version} (was ${result.fromSeed ? 'the config\'s seed: the store was empty' : result.before.version})${result.attempts > 1 ? ` after ${result.attempts} attempts: another writer changed it meanwhile` : ''}`
      : opts.dryRun
        ? `dry run: nothing written (the map is at version ${result.before.version})`
        : `nothing written (the map stays at version ${result.before.version})`;
    process.stdout.write(`${formatShardMapDiff(result.changes)}\n${outcome}\n`);
    return result;
  } finally {
    await target.store.close();
  }
}

/** `topology promote <host>`: failover of every range mastered by host to its slave. */
export async function promoteTopology(host: string, opts: EditOptions & { dropOldMaster?: boolean }): Promise<void> {
  await runEdit(opts, [], (map) => promoteSlave(map, host, { dropOldMaster: opts.dropOldMaster === true }));
}

/** `topology split <first>..<last> --master H --slave H [--mod]`: moves shards to a new pair. */
export async function splitTopology(spanText: string, opts: EditOptions & { master?: string; slave?: string; mod?: boolean }): Promise<void> {
  const span = parseShardSpan(spanText);
  if (opts.master === undefined) throw new ShardKitError('INVALID_ARGUMENT', 'split needs --master <host>: the new master of the moved shards');
  const pair = { master: opts.master, ...(opts.slave !== undefined ? { slave: opts.slave } : {}) };
  await runEdit(opts, [pair.master, pair.slave], (map) => moveShards(map, span, pair, { fleet: opts.mod ? 'mod' : 'objects' }));
}

/** `topology open|close <first>..<last> [--master H --slave H]`: placement of new objects; new shards past the end. */
export async function openTopology(spanText: string, open: boolean, opts: EditOptions & { master?: string; slave?: string }): Promise<void> {
  const span = parseShardSpan(spanText);
  if (opts.master === undefined && opts.slave !== undefined) throw new ShardKitError('INVALID_ARGUMENT', '--slave needs --master: both name the hosts of new shards');
  const pair = opts.master === undefined ? undefined : { master: opts.master, ...(opts.slave !== undefined ? { slave: opts.slave } : {}) };
  const { before } = await runEdit(opts, pair ? [pair.master, pair.slave] : [], (map) => setOpen(map, span, open, pair));
  // New shards exist in the map before they exist on their master: running services place new
  // objects on open ones at once, and those creates fail until init has made them. Only the
  // shards past the map's old end are new (the others were opened or closed where they are).
  const first = Math.max(span.first, before.shardCount);
  if (pair !== undefined && first <= span.last && opts.dryRun !== true && opts.json !== true) {
    const spanText = first === span.last ? `${first}` : `${first}..${span.last}`;
    process.stderr.write(open
      ? `next: shardkit init (it creates shards ${spanText} on ${pair.master}); until then, new objects that running services place there fail with SHARD_UNAVAILABLE. Without that window: topology close ${spanText} --master ${pair.master}${pair.slave !== undefined ? ` --slave ${pair.slave}` : ''}, then init, then topology open ${spanText}\n`
      : `next: shardkit init (it creates shards ${spanText} on ${pair.master}), then topology open ${spanText}\n`);
  }
}
