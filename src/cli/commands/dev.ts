import type { Command } from 'commander';
import { ShardKitError } from '../../errors.js';
import type { UpOptions } from '../actions/dev.js';
import type { DevClusterExtension } from '../../ops/dev-cluster.js';
import { action, intOption } from '../run-action.js';

/**
 * DEFAULT_DEV_PAIRS and DEFAULT_DEV_SHARDS of src/ops/dev-cluster.ts, for the help text only:
 * importing that module would load mysql2 and zod for every `--help`. A test keeps them equal.
 */
export const HELP_DEFAULT_DEV_PAIRS = 2;
export const HELP_DEFAULT_DEV_SHARDS = 256;

/**
 * Extensions add other kinds of dev servers (e.g. ticket servers) to `dev up`: a command module
 * adds its option to `dev up` with `devUpExtensionOptions.push(...)` below.
 */
export interface DevUpExtensionOption {
  /** commander flags, e.g. '--ticket-servers <n>'. */
  flags: string;
  description: string;
  parse?: (value: string) => unknown;
  /**
   * The extension to use when the option is given (value is the parsed option). Called only
   * when `dev up` runs, so it may import its implementation then.
   */
  extension(value: unknown): Promise<DevClusterExtension | undefined> | DevClusterExtension | undefined;
  /** The option's property name in commander's opts (e.g. 'ticketServers'). */
  key: string;
}

export const devUpExtensionOptions: DevUpExtensionOption[] = [];

// `shardkit dev up --widecolumn myrocks`: the pairs load MyRocks and hold the wide-column shards.
devUpExtensionOptions.push({
  flags: '--widecolumn <engine>',
  description: 'wide-column engine of the cluster\'s config: "myrocks" loads MariaDB\'s RocksDB engine on the pairs (Debian package mariadb-plugin-rocksdb, not installed by this command) and creates the wide-column shards; "rocksdb" (the embedded default) changes nothing (first run only)',
  parse: (value: string) => {
    if (value !== 'myrocks' && value !== 'rocksdb') throw new ShardKitError('INVALID_ARGUMENT', `--widecolumn must be "myrocks" or "rocksdb", got ${JSON.stringify(value.slice(0, 40))}`);
    return value;
  },
  key: 'widecolumn',
  extension: async (value) => (value === 'myrocks' ? (await import('../actions/widecolumn-myrocks-dev.js')).myrocksDevExtension() : undefined),
});

export function register(program: Command): void {
  const dev = program
    .command('dev')
    .description('A local cluster of real MariaDB (or, with --engine postgres, PostgreSQL) master/slave pairs for development and tests (docs/dev-cluster.md)');

  const up = dev
    .command('up')
    .description('Start N master/slave pairs of mariadbd under --dir (GTID replication, 127.0.0.1 only), write DIR/shardkit.json and create every shard; on an existing dir, start again whatever is not running')
    .requiredOption('--dir <dir>', 'directory holding the servers, cluster.json and shardkit.json')
    .option('--pairs <n>', `master/slave pairs (first run only; default ${HELP_DEFAULT_DEV_PAIRS})`, intOption('--pairs', 1, 64))
    .option('--shards <n>', `object shards, spread evenly over the pairs (first run only; default ${HELP_DEFAULT_DEV_SHARDS})`, intOption('--shards', 1, 65536))
    .option('--mod-shards <n>', 'mod shards (lookup fleet) on the same pairs (first run only; default: --shards)', intOption('--mod-shards', 1, 65536))
    .option('--engine <engine>', 'mariadb (default) or postgres: PostgreSQL 15 master/standby pairs (streaming replication from pg_basebackup; first run only; default 1 pair, 16 shards)')
    .option('--semi-sync', 'semi-synchronous replication (AFTER_SYNC, 2 s timeout) on every pair, so an emergency failover loses no acknowledged write while the slave is connected (first run only)')
    .option('--sync', 'commits wait for the slave: on PostgreSQL a synchronous standby per pair (synchronous_standby_names; a master blocks while its standby is down), on MariaDB the same as --semi-sync (first run only)')
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
      const ext = await o.extension(opts[o.key]);
      if (ext) extensions.push(ext);
    }
    await (await import('../actions/dev.js')).devUpCommand(opts, extensions);
  }));

  dev
    .command('status')
    .description('Show every server of the dev cluster: name, role, host, port, pid, master, replication state and lag')
    .requiredOption('--dir <dir>', 'directory given to `dev up`')
    .option('--json', 'print an array of {name, role, host, port, socket, pid, master, replicationLagSeconds}')
    .action(action(async (opts: { dir: string; json?: boolean }) => (await import('../actions/dev.js')).devStatusCommand(opts)));

  dev
    .command('add-pair')
    .description('Start one more empty master/slave pair in the dev cluster (the target of a shard move), add it to DIR/shardkit.json hosts (not to the map) and print its names; MariaDB: its master stays read-only until the map names it master; PostgreSQL (dev up --engine postgres): a writable master and a streaming standby, ready to be a shard move\'s target')
    .requiredOption('--dir <dir>', 'directory given to `dev up`')
    .option('--json', 'print {pair, master, slave}')
    .action(action(async (opts: { dir: string; json?: boolean }) => (await import('../actions/dev.js')).devAddPairCommand(opts)));

  dev
    .command('down')
    .description('Stop every server of the dev cluster (clean shutdown); the data stays in --dir for the next `dev up`')
    .requiredOption('--dir <dir>', 'directory given to `dev up`')
    .action(action(async (opts: { dir: string }) => (await import('../actions/dev.js')).devDownCommand(opts)));
}
