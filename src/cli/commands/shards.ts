import type { Command } from 'commander';
import type { DropMovedOptions, MoveCommandOptions, VerifyCommandOptions } from '../actions/shards.js';
import { parseCopyRate, parseSourceLag } from '../../moves/copy-throttle.js';
import { action, intOption } from '../run-action.js';

export function register(program: Command): void {
  const shards = program.command('shards').description('Online shard moves and verification (docs/moves.md)');
  const common = (cmd: Command): Command =>
    cmd
      .option('--dir <dir>', 'a dev cluster (`shardkit dev up --dir`): its config, and admin access over its server sockets')
      .option('--data <dir>', 'data directory (as for serve; default: the config file\'s directory, else ./data)')
      .option('--config <file>', 'config file (default: <dir or data>/shardkit.json)')
      .option('--json', 'JSON lines on stdout: one per phase, then the result');

  common(shards.command('move <first..last>'))
    .description('Move object shards first..last (inside one range) to another master/slave pair while services keep serving them')
    .option('--to <master>', 'the target master (declared in the config\'s "hosts")')
    .option('--to-slave <host>', 'the target\'s slave (declared in the config\'s "hosts")')
    .option('--hold-ms <n>', 'how long services hold writes to the moving shards during the cutover', intOption('--hold-ms', 1, 60_000), 400)
    .option('--max-rate <rate>', 'how fast the copy may read from the source at most: rows per second (5000; MariaDB) or bytes per second (20MB/s, 512KiB/s; both engines); default: no limit (MariaDB also waits while the source\'s slave lags)', parseCopyRate)
    .option('--copy-streams <n>', 'source sessions (MariaDB, each copying its databases) or tables (PostgreSQL) copied at once, default 4; on MariaDB 1 takes no shared lock on the source\'s slave (a hot source: docs/moves.md)', intOption('--copy-streams', 1, 16))
    .option('--max-source-lag <lag>', 'the most the copy lets the source\'s slave fall behind (it waits from half of it on): transactions on MariaDB (default 1000), bytes of WAL on PostgreSQL (64MB, 512KiB; default 64MiB)', parseSourceLag)
    .option('--resume', 'continue the move of first..last recorded in the shard map (after a crash of the mover)')
    .option('--abort', 'roll back the move of first..last (before its switch): the source serves again')
    .addHelpText('after', `
Phases, each recorded in the topology store: started -> copied -> frozen (services hold writes,
reads go on) -> fenced (the source refuses everything) -> switched (one compare-and-set names the
target). A mover killed in any phase leaves the move recorded: run the same command with --resume
or --abort. Any failure before the switch rolls the move back by itself.
Embedded default (SQLite): the copy runs under the freeze with SQLite's online backup API.
MariaDB (storage backend mysql): with admin access (--dir names a dev cluster, or
SHARDKIT_ADMIN_USER/_PASSWORD and SHARDKIT_REPL_USER/_PASSWORD are set) the shards' object tables
are pre-copied before the freeze: one mariadb-dump at a GTID position loaded into the target
master and slave, then a replication connection move_<id> on the target master; the freeze waits
until its lag is small. Then the fence renames the tables into dbNNNNN_moved on the source
master (waiting for transactions in flight), the target catches up (MASTER_GTID_WAIT), and the
copies are verified before the switch. Without admin access the copy runs under the freeze:
choose --hold-ms to cover it.
PostgreSQL (storage backend postgres; the source needs wal_level=logical): a publication of the
shards' object tables on the source master and a subscription on the target master copy and
then stream every change before the freeze; the freeze waits until the lag is under 4 MiB. The
fence moves the tables into dbNNNNN_moved on the source (waiting for transactions in flight),
the target applies a marker row written after it, sequences are set past the source's, verify
compares hash aggregates, then the switch; the subscription is dropped after it.

Example:
  shardkit shards move 0..3 --to MySQL002A --to-slave MySQL002B --data ./data
  shardkit shards drop-moved --data ./data
  shardkit dev up --engine postgres --dir ./pg && shardkit dev add-pair --dir ./pg
  shardkit shards move 0..3 --to PG002A --to-slave PG002B --dir ./pg
  shardkit shards move 0..3 --to MySQL002A --config /etc/shardkit.json   # a fleet: SHARDKIT_ADMIN_* set`)
    .action(action(async (span: string, opts: MoveCommandOptions) => (await import('../actions/shards.js')).moveCommand(span, opts)));

  common(shards.command('verify <first..last>'))
    .description('Compare the copies of object shards first..last chunk by chunk (primary-key chunks, hashed): a running move\'s source against its target, otherwise (a switched move too) a master against its slave')
    .option('--against-source', 'after a switched move, compare the target with the source\'s fenced copy instead of with its slave (every write since the switch shows as a difference)')
    .addHelpText('after', `
A master and its slave are compared at a consistent point per chunk: the slave's rows are read
once it has applied the master's position read after the master's chunk (MariaDB: the GTID
position, MASTER_GTID_WAIT; PostgreSQL: pg_current_wal_lsn() on the master, waited for with
pg_last_wal_replay_lsn() on the standby). A slave that does not get there in 30 s (replay paused,
disconnected) is an error, not a comparison. On PostgreSQL the standby is a physical copy of the
master's WAL: verify refuses a slave that is not this master's standby (not in recovery, or
another system identifier), reports one that lags, and otherwise finds rows only where replay
produced other data than the master holds (a storage fault or a replay bug); nobody can change a
row by hand on a standby (it is read-only). Mismatching chunks are checked again, then reported with table, key range and the
row counts of each side. Exit code 0 when clean, 3 when not.`)
    .action(action(async (span: string, opts: VerifyCommandOptions) => (await import('../actions/shards.js')).verifyCommand(span, opts)));

  common(shards.command('drop-moved'))
    .description('Remove what the old hosts still hold of switched moves (fenced shard files; MariaDB: the dbNNNNN_moved databases; PostgreSQL: the dbNNNNN_moved schemas), then forget those moves')
    .action(action(async (opts: DropMovedOptions) => (await import('../actions/shards.js')).dropMovedCommand(opts)));
}
