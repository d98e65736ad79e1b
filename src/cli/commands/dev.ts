import type { Command } from 'commander';
import { DEFAULT_DEV_PAIRS, DEFAULT_DEV_SHARDS, DevCluster, devUp, type DevClusterExtension, type DevServerDetail, type DevServerStatus } from '../../ops/dev-cluster.js';
import { createProgress, type Progress } from '../../ops/progress.js';
import { action, intOption } from '../run-action.js';

/** The `dev status --json` shape: exactly these keys, in this order. */
function jsonRow(s: DevServerDetail): DevServerStatus {
  return { name: s.name, role: s.role, host: s.host, port: s.port, socket: s.socket, pid: s.pid, master: s.master, replicationLagSeconds: s.replicationLagSeconds };
}

function table(rows: DevServerDetail[]): string {
  const head = ['NAME', 'ROLE', 'HOST', 'PORT', 'PID', 'MASTER', 'LAG', 'REPLICATION'];
  const body = rows.map((r) => [r.name, r.role, r.host, String(r.port), r.pid === null ? 'down' : String(r.pid), r.master ?? '-', r.replicationLagSeconds === null ? '-' : `${r.replicationLagSeconds}s`, r.replication]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join('  ');
  return [line(head), ...body.map(line)].join('\n');
}

interface UpOptions {
  dir: string;
  pairs?: number;
  shards?: number;
  modShards?: number;
  init: boolean;
  json?: boolean;
}

/**
 * Extensions add other kinds of dev servers (e.g. ticket servers) to `dev up`: a command module
 * adds its option to `dev up` with `devUpExtensionOptions.push(...)` below.
 */
export interface DevUpExtensionOption {
  /** commander flags, e.g. '--ticket-servers <n>'. */
  flags: string;
  description: string;
  parse?: (value: string) => unknown;
  /** The extension to use when the option is given (value is the parsed option). */
  extension(value: unknown): DevClusterExtension | undefined;
  /** The option's property name in commander's opts (e.g. 'ticketServers'). */
  key: string;
}

export const devUpExtensionOptions: DevUpExtensionOption[] = [];

export function register(program: Command): void {
  const dev = program
    .command('dev')
    .description('A local cluster of real MariaDB master/slave pairs for development and tests (docs/dev-cluster.md)');

  const up = dev
    .command('up')
    .description('Start N master/slave pairs of mariadbd under --dir (GTID replication, 127.0.0.1 only), write DIR/shardkit.json and create every shard; on an existing dir, start again whatever is not running')
    .requiredOption('--dir <dir>', 'directory holding the servers, cluster.json and shardkit.json')
    .option('--pairs <n>', `master/slave pairs (first run only; default ${DEFAULT_DEV_PAIRS})`, intOption('--pairs', 1, 64))
    .option('--shards <n>', `object shards, spread evenly over the pairs (first run only; default ${DEFAULT_DEV_SHARDS})`, intOption('--shards', 1, 65536))
    .option('--mod-shards <n>', 'mod shards (lookup fleet) on the same pairs (first run only; default: --shards)', intOption('--mod-shards', 1, 65536))
    .option('--no-init', 'start the servers but do not create the shards')
    .option('--json', 'print `dev status --json` when done');
  for (const o of devUpExtensionOptions) {
    if (o.parse) up.option(o.flags, o.description, o.parse);
    else up.option(o.flags, o.description);
  }
  up.action(action(async (opts: UpOptions & Record<string, unknown>) => {
    const extensions: DevClusterExtension[] = [];
    for (const o of devUpExtensionOptions) {
      if (opts[o.key] === undefined) continue;
      const ext = o.extension(opts[o.key]);
      if (ext) extensions.push(ext);
    }
    let progress: Progress | undefined;
    const result = await devUp({
      dir: opts.dir,
      ...(opts.pairs !== undefined ? { pairs: opts.pairs } : {}),
      ...(opts.shards !== undefined ? { shards: opts.shards } : {}),
      ...(opts.modShards !== undefined ? { modShards: opts.modShards } : {}),
      skipInit: !opts.init,
      extensions,
      log: (m) => process.stderr.write(`shardkit: ${m}\n`),
      onInitProgress: (p) => {
        progress ??= createProgress('init', p.total);
        progress.update(p.done, { created: p.created });
      },
    });
    progress?.finish(result.init ? { created: result.init.created } : undefined);
    const rows = await result.cluster.status();
    if (opts.json) {
      process.stdout.write(`${JSON.stringify(rows.map(jsonRow), null, 2)}\n`);
      return;
    }
    process.stdout.write(`${table(rows)}\n`);
    const what = result.created ? 'created' : result.started.length > 0 ? `restarted ${result.started.join(', ')}` : 'already running';
    const st = result.cluster.state;
    const init = result.init ? `; ${st.shards} object shards + ${st.modShards} mod shards (${result.init.created} created now)` : '';
    process.stdout.write(`cluster ${what}${init}\nconfig: ${result.cluster.configPath}\n`);
  }));

  dev
    .command('status')
    .description('Show every server of the dev cluster: name, role, host, port, pid, master, replication state and lag')
    .requiredOption('--dir <dir>', 'directory given to `dev up`')
    .option('--json', 'print an array of {name, role, host, port, socket, pid, master, replicationLagSeconds}')
    .action(action(async (opts: { dir: string; json?: boolean }) => {
      const rows = await DevCluster.require(opts.dir).status();
      if (opts.json) process.stdout.write(`${JSON.stringify(rows.map(jsonRow), null, 2)}\n`);
      else process.stdout.write(`${table(rows)}\n`);
    }));

  dev
    .command('down')
    .description('Stop every server of the dev cluster (clean shutdown); the data stays in --dir for the next `dev up`')
    .requiredOption('--dir <dir>', 'directory given to `dev up`')
    .action(action(async (opts: { dir: string }) => {
      const stopped = await DevCluster.require(opts.dir).down();
      process.stdout.write(stopped.length > 0 ? `stopped ${stopped.join(', ')}\n` : 'nothing was running\n');
    }));
}
