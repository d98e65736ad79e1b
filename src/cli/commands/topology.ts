import type { Command } from 'commander';
import { action } from '../run-action.js';

export function register(program: Command): void {
  const topology = program.command('topology').description('The shard map: which hosts serve which logical shards (docs/topology.md)');

  topology
    .command('show')
    .description('Print the shard map as a table (range, master, slave, open; then the mod-shard fleet) or as its JSON form')
    .option('--file <file>', 'a topology JSON file, or a shardkit config file (the live map from its topology store, else its "shardMap"); default: the built-in default map')
    .option('--data <dir>', 'with a config file: the data directory whose topology store holds the live map (default: the config file\'s directory)')
    .option('--json', 'print the JSON form: {"version","ranges":[{"range","master","slave","open"}...],"modShards":{"count","ranges"}}')
    .option('--ranges', 'list every object range even past 200 (a larger map is summed up by master)')
    .addHelpText('after', `
Without --file, prints the default map: 4096 shards (all open) over MySQL001A/B..MySQL008A/B and
4096 mod shards over msdb001a/b..msdb008a/b.`)
    .action(action(async (opts: { file?: string; json?: boolean; data?: string; ranges?: boolean }) => (await import('../actions/topology.js')).showTopology(opts)));

  topology
    .command('upgrade')
    .description('Convert a topology store holding one JSON document (etcd or file) to the record layout (#30): a root plus one record per pair and per move; keeps a copy of the document')
    .requiredOption('--file <config>', 'the shardkit config whose topology store (etcd, or file under --data) to upgrade, or a topology file itself')
    .option('--data <dir>', 'with a config whose store is a file: the data directory holding it (default: the config file\'s directory)')
    .option('--json', 'print one JSON line: {"upgraded","layout","version","records","copyKey" (etcd) or "copyPath" (file)}')
    .addHelpText('after', `
Idempotent: a store already in the record layout (or empty) is left as it is. The old document is
kept beside it: etcd <key>/v1-copy, file <file>.v1-copy. Services of an older shardkit cannot read
the record layout and refuse to start against it (INVALID_CONFIG): upgrade them first.
docs/topology.md, "Record layout".`)
    .action(action(async (opts: { file: string; data?: string; json?: boolean }) => (await import('../actions/topology.js')).upgradeTopology(opts)));

  const edit = (cmd: Command): Command =>
    cmd
      .option('--file <config>', 'the shardkit config whose topology store holds the live map (or a topology file, which is then the store)')
      .option('--data <dir>', 'the data directory holding the config\'s topology store (default: the config file\'s directory; the file store is <data>/topology.json)')
      .option('--dry-run', 'print the changes and write nothing')
      .option('--json', 'print the new map\'s JSON form instead of the changes');
  const lazy = async () => import('../actions/topology.js');
  const afterEdit = `
The change is written with compare-and-set (redone on the newer map if another operator wrote
first); running services follow the store and need no restart. docs/topology.md, "Changing the map".`;

  edit(topology.command('promote <host>'))
    .description('Failover: every range (object and mod shards) mastered by <host> gets its slave as master; <host> becomes the slave')
    .option('--drop-old-master', 'leave those ranges without a slave instead of making <host> their slave')
    .addHelpText('after', `
Example:
  $ shardkit topology promote MySQL003A --file shardkit.json
  object shards 1024..1535: MySQL003A/MySQL003B open -> MySQL003B/MySQL003A open
  wrote shard map version 5 (was 4)
${afterEdit}`)
    .action(action(async (host: string, opts: { file?: string; data?: string; dryRun?: boolean; json?: boolean; dropOldMaster?: boolean }) =>
      (await lazy()).promoteTopology(host, opts)));

  edit(topology.command('split <first..last>'))
    .description('Move object shards first..last (inside one range) to a new master/slave pair, splitting that range')
    .option('--master <host>', 'the new master (declared in the config\'s "hosts")')
    .option('--slave <host>', 'the new slave (declared in the config\'s "hosts")')
    .option('--mod', 'split mod shards instead of object shards')
    .addHelpText('after', `
Build the new pair and replicate the old master to it first; afterwards drop the moved databases
from the old hosts (SPEC section 5). Example, moving the upper half of 0..511:
  $ shardkit topology split 256..511 --master MySQL009A --slave MySQL009B --file shardkit.json
  object shards 256..511: MySQL001A/MySQL001B open -> MySQL009A/MySQL009B open
  wrote shard map version 2 (was 1)
${afterEdit}`)
    .action(action(async (span: string, opts: { file?: string; data?: string; dryRun?: boolean; json?: boolean; master?: string; slave?: string; mod?: boolean }) =>
      (await lazy()).splitTopology(span, opts)));

  for (const [name, open] of [['open', true], ['close', false]] as const) {
    edit(topology.command(`${name} <first..last>`))
      .description(open
        ? 'Let new objects be placed on object shards first..last; with --master/--slave, add shards past the current last one'
        : 'Stop placing new objects on object shards first..last (their objects are still read and updated); with --master/--slave, add shards past the current last one, closed: then `init`, then `topology open` (no moment when running services place objects on shards not yet created)')
      .option('--master <host>', 'for shards past the current last shard: their master')
      .option('--slave <host>', 'for shards past the current last shard: their slave')
      .addHelpText('after', `
Example${open ? ', adding capacity' : ''}:
  $ shardkit topology ${open ? 'open 4096..8191 --master MySQL009A --slave MySQL009B' : 'close 0..511'} --file shardkit.json
${afterEdit}`)
      .action(action(async (span: string, opts: { file?: string; data?: string; dryRun?: boolean; json?: boolean; master?: string; slave?: string }) =>
        (await lazy()).openTopology(span, open, opts)));
  }

  const hosts = topology.command('hosts').description('Database hosts kept in the topology store (#28): running services reach a pair added later through them, whatever their config files say');
  const hostsHelp = `
A host record holds address, port, role and engine, never a secret: each service connects with its
own config's storage user and password, or with those of the config host named by
--credentials-from (passwords come from config files or the environment, never from the store).
\`shardkit dev add-pair\` writes these records for a dev cluster. docs/moves.md, "Hosts".`;
  const lazyHosts = async () => import('../actions/topology-hosts.js');
  hosts
    .command('add <name>')
    .description('Add or replace a host record (the name the shard map uses, e.g. MySQL003A)')
    .requiredOption('--file <config>', 'the shardkit config whose topology store keeps the hosts')
    .option('--data <dir>', 'the data directory holding a file topology store (default: the config file\'s directory)')
    .requiredOption('--address <host>', 'where services connect: a host name or an IP address')
    .requiredOption('--port <port>', 'its port (1..65535)')
    .requiredOption('--role <role>', 'master or slave (the map decides who is master; this is for people)')
    .requiredOption('--engine <engine>', 'mariadb or postgres')
    .option('--credentials-from <host>', 'a host of the services\' config "hosts" whose user and password to use')
    .option('--json', 'print one JSON line: {"added",...record}')
    .addHelpText('after', `
Example:
  $ shardkit topology hosts add MySQL003A --address 10.0.3.1 --port 3306 --role master --engine mariadb --file shardkit.json
${hostsHelp}`)
    .action(action(async (name: string, opts: { file: string; data?: string; address: string; port: string; role: string; engine: string; credentialsFrom?: string; json?: boolean }) => (await lazyHosts()).addHost(name, opts)));
  hosts
    .command('list')
    .description('List the host records of the topology store')
    .requiredOption('--file <config>', 'the shardkit config whose topology store keeps the hosts')
    .option('--data <dir>', 'the data directory holding a file topology store')
    .option('--json', 'print {"hosts":[{"name","address","port","role","engine"}...]}')
    .addHelpText('after', hostsHelp)
    .action(action(async (opts: { file: string; data?: string; json?: boolean }) => (await lazyHosts()).listHosts(opts)));
  hosts
    .command('remove <name>')
    .description('Remove a host record; refused while the live shard map still names the host')
    .requiredOption('--file <config>', 'the shardkit config whose topology store keeps the hosts')
    .option('--data <dir>', 'the data directory holding a file topology store')
    .option('--json', 'print one JSON line: {"removed"}')
    .addHelpText('after', hostsHelp)
    .action(action(async (name: string, opts: { file: string; data?: string; json?: boolean }) => (await lazyHosts()).removeHost(name, opts)));
}
