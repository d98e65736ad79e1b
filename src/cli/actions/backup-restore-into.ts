import { existsSync } from 'node:fs';
import { loadConfigFile, resolveSchema } from '../../config/config.js';
import { ShardKitError } from '../../errors.js';
import { DirectoryTarget, openBackupEngine, parseTime, restoreShardsInPlace, restoreShardsInto, type RestoreIntoRequest } from '../../ops/backup/index.js';
import { withHostRecords } from '../../ops/fleet-hosts.js';
import { openRestoreInTarget } from '../../ops/move-engines.js';
import { createProgress, type Progress } from '../../ops/progress.js';
import { createTopologyStore } from '../../topology/index.js';
import { parseShardSpan, type ShardSpan } from '../../topology/map-edits.js';
import { ShardMap } from '../../topology/shard-map.js';
import type { BackupCliOptions } from './backup.js';
import { locations, stopHook } from './shards.js';

export interface RestoreIntoCliOptions extends BackupCliOptions {
  from: string;
  id?: string;
  toTime?: string;
  shards?: string;
  into?: string;
  intoSlave?: string;
  holdMs?: number;
  resume?: string;
  abort?: string;
  force?: boolean;
}

/** `backup restore --shards A..B [--to-time T] --into MASTER [--into-slave SLAVE]`, and its `--resume` / `--abort MOVE`. */
export async function restoreIntoCommand(opts: RestoreIntoCliOptions): Promise<void> {
  const request = parseRequest(opts);
  const { dataDir, configPath } = locations(opts);
  if (!existsSync(configPath)) throw new ShardKitError('INVALID_CONFIG', `no config file at ${configPath} (give --dir for a dev cluster, or --config)`);
  const declared = loadConfigFile(configPath);
  const store = createTopologyStore(declared.topologyStore, { dataDir });
  try {
    const config = await withHostRecords(declared, store);
    // As a service would on first start (and shards move does): the config's map seeds the store.
    if ((await store.read()) === undefined) await store.write(ShardMap.fromJSON(config.shardMap, { hosts: Object.keys(config.hosts) }), 0);
    const opened = openRestoreInTarget(config, resolveSchema(config), dataDir);
    const backup = await openBackupEngine({ ...(opts.dir !== undefined ? { dir: opts.dir } : {}), ...(opts.config !== undefined ? { config: opts.config } : {}), ...(opts.data !== undefined ? { data: opts.data } : {}) });
    const jsonLines = opts.json === true || !process.stderr.isTTY;
    let bar: Progress | undefined;
    const hook = stopHook();
    try {
      if ('inPlace' in request) {
        const r = await restoreShardsInPlace({ backup, target: new DirectoryTarget(opts.from), store, tables: opened.tables, ...(opened.preamble !== undefined ? { preamble: opened.preamble } : {}) }, request);
        const span = `${r.range[0]}..${r.range[1]}`;
        if (jsonLines) process.stdout.write(`${JSON.stringify({ event: 'result', outcome: 'restored', ...r })}\n`);
        else process.stdout.write(`restored shards ${span} in place from backup ${r.backupId}${r.toTime !== undefined ? ` to ${r.toTime}` : ''}: ${r.tables} tables, ${r.rows} rows, checked against the restore (${Object.entries(r.pairs).map(([m, s]) => `${m}: ${s.length} shard(s)`).join(', ')})\n`);
        return;
      }
      const r = await restoreShardsInto({
        backup, target: new DirectoryTarget(opts.from), store, hosts: Object.keys(config.hosts), tables: opened.tables, moveTarget: opened.moveTarget,
        ...(opened.preamble !== undefined ? { preamble: opened.preamble } : {}),
        ...(hook !== undefined ? { afterPhase: hook } : {}),
        onEvent: (e) => {
          if (jsonLines) process.stdout.write(`${JSON.stringify({ event: 'phase', ...e })}\n`);
          else process.stderr.write(`${e.moveId}: ${e.phase}${e.detail ? ` ${JSON.stringify(e.detail)}` : ''} (${e.elapsedMs} ms)\n`);
        },
        onProgress: (done, total, rows) => {
          if (jsonLines) {
            process.stdout.write(`${JSON.stringify({ event: 'progress', step: 'restoring', pairsDone: done, pairsTotal: total, ...rows })}\n`);
            return;
          }
          bar ??= createProgress('restore aside', total, { mode: 'bar', unit: 'pairs' });
          bar.update(done, { rows: rows?.rowsCopied === undefined ? undefined : `${rows.rowsCopied}/${rows.rowsTotal ?? '?'}` });
        },
      }, request);
      bar?.finish();
      const summary = { event: 'result', moveId: r.move.id, outcome: r.outcome, range: r.move.range, backupId: r.backupId, ...(r.toTime !== undefined ? { toTime: r.toTime } : {}), source: r.move.source, target: r.move.target, ...(r.freezeToSwitchMs !== undefined ? { freezeToSwitchMs: r.freezeToSwitchMs } : {}), ...(r.verify !== undefined ? { verifiedRows: r.verify.rows, verifiedTables: r.verify.tables } : {}) };
      if (jsonLines) process.stdout.write(`${JSON.stringify(summary)}\n`);
      else {
        const span = `${r.move.range[0]}..${r.move.range[1]}`;
        process.stdout.write(r.outcome === 'switched'
          ? `restored shards ${span} from backup ${r.backupId}${r.toTime !== undefined ? ` to ${r.toTime}` : ''} onto ${r.move.target.master} and switched them in${r.freezeToSwitchMs !== undefined ? ` (writes held ${r.freezeToSwitchMs} ms)` : ''}; their rows of before the restore stay fenced on ${r.move.source.master} until shards drop-moved\n`
          : `aborted restore ${r.move.id}: ${r.move.source.master} serves shards ${span} as before\n`);
      }
    } finally {
      await backup.close();
      await opened.moveTarget.inner.close();
    }
  } finally {
    await store.close();
  }
}

/** Every option checked before anything is opened: bad input changes nothing. */
type ParsedRequest = RestoreIntoRequest | { span: ShardSpan; toTime?: number; id?: string; inPlace: true; force: boolean };

function parseRequest(o: RestoreIntoCliOptions): ParsedRequest {
  const existing = o.resume ?? o.abort;
  if (o.resume !== undefined && o.abort !== undefined) throw new ShardKitError('INVALID_ARGUMENT', 'give --resume or --abort, not both');
  if (existing !== undefined) {
    if (o.shards !== undefined || o.into !== undefined || o.intoSlave !== undefined || o.toTime !== undefined || o.id !== undefined) throw new ShardKitError('INVALID_ARGUMENT', '--resume and --abort take the recorded restore: give only its move id (and --from)');
    return o.resume !== undefined ? { resume: o.resume } : { abort: o.abort! };
  }
  if (o.shards === undefined) throw new ShardKitError('INVALID_ARGUMENT', '--into needs --shards A..B (the shards to restore onto the spare pair); without --into, restore puts whole pairs back in place');
  if (o.into === undefined && o.intoSlave !== undefined) throw new ShardKitError('INVALID_ARGUMENT', '--into-slave needs --into MASTER');
  if (o.into !== undefined && o.force) throw new ShardKitError('INVALID_ARGUMENT', '--force is for a restore in place; a restore --into leaves the running services alone');
  if (o.into === undefined && o.holdMs !== undefined) throw new ShardKitError('INVALID_ARGUMENT', '--hold-ms is for a restore --into (its switch); a restore in place holds no writes: services are stopped');
  const span = parseShardSpan(o.shards);
  const toTime = o.toTime === undefined ? undefined : parseTime(o.toTime);
  const common = { span, ...(toTime !== undefined ? { toTime } : {}), ...(o.id !== undefined ? { id: o.id } : {}) };
  if (o.into === undefined) return { ...common, inPlace: true, force: o.force === true };
  return { ...common, into: { master: o.into, ...(o.intoSlave !== undefined ? { slave: o.intoSlave } : {}) }, ...(o.holdMs !== undefined ? { holdMs: o.holdMs } : {}) };
}
