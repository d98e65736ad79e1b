import { ShardKitError } from '../../errors.js';
import { DevCluster, devAddPair, devClusterDown, devClusterStatus, devUp, type DevClusterExtension, type DevServerDetail, type DevServerStatus } from '../../ops/dev-cluster.js';
import { createProgress, type Progress } from '../../ops/progress.js';
import { textTable } from '../text-table.js';

/** The `dev status --json` shape: exactly these keys, in this order. */
function jsonRow(s: DevServerDetail): DevServerStatus {
  return { name: s.name, role: s.role, host: s.host, port: s.port, socket: s.socket, pid: s.pid, master: s.master, replicationLagSeconds: s.replicationLagSeconds };
}

function table(rows: DevServerDetail[]): string {
  return textTable(
    ['NAME', 'ROLE', 'HOST', 'PORT', 'PID', 'MASTER', 'LAG', 'REPLICATION'],
    rows.map((r) => [r.name, r.role, r.host, String(r.port), r.pid === null ? 'down' : String(r.pid), r.master ?? '-', r.replicationLagSeconds === null ? '-' : `${r.replicationLagSeconds}s`, r.replication]),
  );
}

function printStatus(rows: DevServerDetail[], json: boolean | undefined): void {
  if (json) process.stdout.write(`${JSON.stringify(rows.map(jsonRow), null, 2)}\n`);
  else process.stdout.write(`${table(rows)}\n`);
}

export interface UpOptions {
  dir: string;
  pairs?: number;
  shards?: number;
  modShards?: number;
  init: boolean;
  semiSync?: boolean;
  sync?: boolean;
  engine?: string;
  json?: boolean;
}

function engineOption(value: string): 'mariadb' | 'postgres' {
  if (value !== 'mariadb' && value !== 'postgres') throw new ShardKitError('INVALID_ARGUMENT', `--engine is mariadb or postgres, got ${JSON.stringify(value.slice(0, 40))}`);
  return value;
}

export async function devUpCommand(opts: UpOptions, extensions: DevClusterExtension[]): Promise<void> {
  let progress: Progress | undefined;
  const result = await devUp({
    dir: opts.dir,
    ...(opts.pairs !== undefined ? { pairs: opts.pairs } : {}),
    ...(opts.shards !== undefined ? { shards: opts.shards } : {}),
    ...(opts.modShards !== undefined ? { modShards: opts.modShards } : {}),
    ...(opts.semiSync || opts.sync ? { semiSync: true } : {}),
    ...(opts.engine !== undefined ? { engine: engineOption(opts.engine) } : {}),
    skipInit: !opts.init,
    extensions,
    log: (m) => process.stderr.write(`shardkit: ${m}\n`),
    onInitProgress: (p) => {
      progress ??= createProgress('init', p.total);
      progress.update(p.done, { created: p.created });
    },
  });
  progress?.finish(result.init ? { created: result.init.created } : undefined);
  const rows = await devClusterStatus(result.cluster);
  printStatus(rows, opts.json);
  if (opts.json) return;
  const what = result.created ? 'created' : result.started.length > 0 ? `restarted ${result.started.join(', ')}` : 'already running';
  const st = result.cluster.state;
  const init = result.init ? `; ${st.shards} object shards + ${st.modShards} mod shards (${result.init.created} created now)` : '';
  process.stdout.write(`cluster ${what}${init}\nconfig: ${result.cluster.configPath}\n`);
}

export async function devStatusCommand(opts: { dir: string; json?: boolean }): Promise<void> {
  printStatus(await devClusterStatus(DevCluster.require(opts.dir)), opts.json);
}

export async function devDownCommand(opts: { dir: string }): Promise<void> {
  const stopped = await devClusterDown(DevCluster.require(opts.dir));
  process.stdout.write(stopped.length > 0 ? `stopped ${stopped.join(', ')}\n` : 'nothing was running\n');
}

export async function devAddPairCommand(opts: { dir: string; json?: boolean }): Promise<void> {
  const added = await devAddPair(opts.dir, { log: (m) => process.stderr.write(`shardkit: ${m}\n`) });
  if (opts.json) process.stdout.write(`${JSON.stringify(added)}\n`);
  else process.stdout.write(`added pair ${added.pair}: master ${added.master}, slave ${added.slave} (in the config's hosts, in no range yet)\n`);
}
