import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import type { ConfigInput } from '../config/config.js';
import { ShardKitError } from '../errors.js';
import type { DevClusterExtension, DevClusterView as DevCluster } from './dev/dev-cluster-view.js';
import { ticketServerSettings } from '../tickets/ticket-server-settings.js';
import type { TicketsConfigInput } from '../tickets/tickets-config.js';
import { initTicketServers } from '../tickets/tickets-init.js';

export const TICKET_ROLE = 'ticket';
/** The seed's sequences, which `dev up --ticket-servers N` configures. */
export const DEV_SEQUENCES = ['photos', 'accounts', 'offline_tasks', 'groups'];
export const MAX_DEV_TICKET_SERVERS = 16;

const serverName = (i: number) => `ticket${i}`;

/** The tickets section for the cluster's ticket servers: the app user over TCP 127.0.0.1, like the shard hosts. */
export function devTicketsConfig(cluster: DevCluster): TicketsConfigInput {
  const servers = cluster.serversWithRole(TICKET_ROLE).map((s) => cluster.instance(s.name));
  // The residues come from each server's own settings, so the config always matches the servers.
  const setting = (inst: (typeof servers)[number], key: string) => Number(inst.settings[key]);
  return {
    servers: servers.map((inst) => ({ name: inst.name, host: '127.0.0.1', port: inst.port, offset: setting(inst, 'auto_increment_offset') })),
    increment: servers.length > 0 ? setting(servers[0]!, 'auto_increment_increment') : 1,
    sequences: DEV_SEQUENCES,
    user: cluster.state.appUser,
    password: cluster.state.appPassword,
  };
}

/**
 * `shardkit dev up --ticket-servers N`: N mariadbd with role `ticket`, server i running with
 * auto_increment_increment = N and auto_increment_offset = i; their tables are created on every
 * `dev up` (idempotent) and the `tickets` section goes into D/shardkit.json. Like every dev
 * server they are restarted by a later `dev up` and stopped by `dev down`.
 */
export function ticketServersExtension(n: number): DevClusterExtension {
  if (!Number.isInteger(n) || n < 1 || n > MAX_DEV_TICKET_SERVERS) {
    throw new ShardKitError('INVALID_ARGUMENT', `--ticket-servers must be in 1..${MAX_DEV_TICKET_SERVERS}, got ${n}`);
  }
  return {
    name: 'tickets',
    servers(cluster) {
      const have = cluster.serversWithRole(TICKET_ROLE).length;
      // The residue split is fixed in each server's settings: changing N would need new servers.
      if (have > 0 && have !== n) {
        throw new ShardKitError('INVALID_ARGUMENT', `the cluster in ${cluster.dir} has ${have} ticket servers, not ${n}: use a new directory to change it`);
      }
      return Array.from({ length: n }, (_, k) => ({ name: serverName(k + 1), role: TICKET_ROLE, settings: ticketServerSettings(n, k + 1) }));
    },
    async afterStart(cluster) {
      const results = await initTicketServers(devTicketsConfig(cluster));
      const failed = results.filter((r) => !r.ok);
      if (failed.length > 0) throw new ShardKitError('INTERNAL', `tickets init failed: ${failed.map((r) => `${r.server}: ${r.error}`).join('; ')}`);
      // A cluster created without ticket servers already has its config: add the section to it.
      if (existsSync(cluster.configPath)) {
        const config = JSON.parse(readFileSync(cluster.configPath, 'utf8')) as ConfigInput;
        if (config.tickets === undefined) {
          config.tickets = devTicketsConfig(cluster);
          writeFileSync(`${cluster.configPath}.tmp`, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
          renameSync(`${cluster.configPath}.tmp`, cluster.configPath);
        }
      }
    },
    configure(config, cluster) {
      config.tickets = devTicketsConfig(cluster);
    },
  };
}
