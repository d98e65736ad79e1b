import type { Command } from 'commander';
import type { FleetCliOptions } from '../actions/failover.js';
import { action, intOption } from '../run-action.js';

const fleetOptions = (cmd: Command): Command =>
  cmd
    .option('--config <file>', 'the shardkit config of a MariaDB fleet (admin and replication accounts from SHARDKIT_ADMIN_USER/_PASSWORD and SHARDKIT_REPL_USER/_PASSWORD)')
    .option('--dir <dir>', 'a dev cluster (`shardkit dev up --dir`): its config, root over the server sockets')
    .option('--data <dir>', 'where the config\'s file topology store resolves (default: the config file\'s directory)')
    .option('--timeout-ms <ms>', 'how long to wait for the slave to catch up (default 30000)', intOption('--timeout-ms', 1, 3_600_000))
    .option('--json', 'print the result as one JSON object');

export function register(program: Command): void {
  fleetOptions(program.command('failover <master>'))
    .description('Promote the slave of <master> (MariaDB fleet or dev cluster; PostgreSQL dev cluster with pg_promote()): planned (freeze the master\'s object ranges so services hold writes, read-only the master, wait for the slave, promote + compare-and-set the map, unfreeze, the old master becomes its slave) or --emergency (the master is gone). docs/failover.md')
    .option('--hold-ms <ms>', 'planned: how long services hold writes to the frozen ranges before answering a retryable SHARD_MOVING (default 2000)', intOption('--hold-ms', 1, 60_000))
    .option('--emergency', 'the master is gone: stop the slave\'s IO thread, apply its relay log, promote; the old master must be rebuilt (`shardkit pair rebuild-slave`)')
    .addHelpText('after', `
Examples:
  $ shardkit failover MySQL001A --dir ./cluster
  $ shardkit failover MySQL001A --emergency --config prod.json --json`)
    .action(action(async (master: string, opts: FleetCliOptions & { emergency?: boolean; holdMs?: number }) => (await import('../actions/failover.js')).failoverCommand(master, opts)));

  program.command('heal')
    .description('Supervisor: probe every master and slave; a master is dead only after --dead-after failed probes AND its slave lost it too. --mode observe (default) recommends the command; --mode act runs the emergency failover (never a broken or lagging slave, never twice for a pair within --flap-window-s). One JSON line per decision on stdout; runs until SIGTERM. docs/failover.md "Automatic failover"')
    .option('--config <file>', 'the shardkit config of a MariaDB fleet (admin and replication accounts from SHARDKIT_ADMIN_USER/_PASSWORD and SHARDKIT_REPL_USER/_PASSWORD)')
    .option('--dir <dir>', 'a dev cluster (MariaDB or PostgreSQL)')
    .option('--data <dir>', 'where the config\'s file topology store resolves (default: the config file\'s directory)')
    .option('--mode <mode>', 'observe (default) or act')
    .option('--interval-ms <ms>', 'time between probe rounds (default 1000)', intOption('--interval-ms', 50, 600_000))
    .option('--probe-timeout-ms <ms>', 'a host that does not answer within this is unreachable (default 1000)', intOption('--probe-timeout-ms', 50, 60_000))
    .option('--dead-after <n>', 'consecutive failed probes before a master counts as unreachable (default 3)', intOption('--dead-after', 1, 1000))
    .option('--max-lag-s <s>', 'a slave further behind is not promoted (default 30)', intOption('--max-lag-s', 0, 86_400))
    .option('--flap-window-s <s>', 'no second automatic failover of a pair within this (default 3600)', intOption('--flap-window-s', 0, 604_800))
    .option('--once', 'one probe round, then exit')
    .option('--rebuild', 'act mode: after a failover, rebuild the pair\'s slave by itself (pair rebuild-slave): a spare host, else the old master (a dev cluster restarts it); reported as a "rebuild" decision')
    .option('--webhook <url>', 'POST every decision (JSON, as on stdout) to this URL; 3 tries, never holds the supervisor up')
    .option('--metrics-port <n>', 'serve Prometheus /metrics (decisions, failovers, pair health) and /status (each pair\'s last decision) on 127.0.0.1:<n> (0: a free port, logged)', intOption('--metrics-port', 0, 65535))
    .option('--lease-ttl-s <s>', 'act mode with an etcd topology store: the acting supervisor\'s lease TTL; another supervisor takes over this long after it dies (default 5)', intOption('--lease-ttl-s', 1, 600))
    .option('--witness <who>', 'services: before failing a master over, ask the running services (their heartbeats) whether they still reach it; any that does keeps it from being failed over (default: none; the status is published for the dashboard either way)')
    .option('--witness-wait-ms <ms>', 'with --witness services: how long after the first missed probe to wait for the services\' word before going on without it (default 5000)', intOption('--witness-wait-ms', 0, 600_000))
    .option('--spares <hosts>', 'comma-separated hosts declared in the config that --rebuild may make slaves (a host the map names is never used)')
    .addHelpText('after', `
Examples:
  $ shardkit heal --dir ./cluster                      # observe: what would it do?
  $ shardkit heal --dir ./cluster --mode act --rebuild # fail over and make the pair whole again
  $ shardkit heal --config prod.json --mode act --dead-after 3 --interval-ms 1000`)
    .action(action(async (opts: import('../actions/heal.js').HealCliOptions) => (await import('../actions/heal.js')).healCommand(opts)));

  const pair = program.command('pair').description('Master/slave pairs: rebuild a slave, compare master and slave (docs/failover.md)');
  fleetOptions(pair.command('rebuild-slave <master>'))
    .description('(Re)build the slave of <master> from a consistent copy (mariadb-dump --gtid; pg_basebackup on a PostgreSQL dev cluster; on a PostgreSQL fleet given by --config, the command in SHARDKIT_REBUILD_COMMAND) while writes continue, start GTID replication and record it in the map; drops the slave\'s own data (a diverged old master is rebuilt this way); in a dev cluster it starts the server')
    .option('--slave <host>', 'the host to build (default: the slave the map names for <master>)')
    .option('--sync', 'PostgreSQL fleet (--config): make the rebuilt standby the master\'s synchronous standby (its application_name must be its host name)')
    .action(action(async (master: string, opts: FleetCliOptions & { slave?: string; sync?: boolean }) => (await import('../actions/failover.js')).rebuildSlaveCommand(master, opts)));
  fleetOptions(pair.command('verify <master>'))
    .description('Wait for the slave of <master> to reach the master\'s position, then compare every table by CHECKSUM TABLE; exit 3 when any differs (quiesce writes to the master first for an exact answer)')
    .action(action(async (master: string, opts: FleetCliOptions) => (await import('../actions/failover.js')).verifyPairCommand(master, opts)));
}
