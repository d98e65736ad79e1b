import type { HostAdmin } from '../failover/host-admin.js';
import type { MariadbInstance } from '../mariadb/mariadb-instance.js';

/** Admin access to a throwaway local server (a restore drill's, a restore aside's), by its socket. */
export function scratchAdmin(inst: MariadbInstance): HostAdmin {
  return {
    connect: () => inst.connect(),
    address: () => ({ host: inst.host, port: inst.port }),
    clientArgs: () => [`--socket=${inst.socket}`],
    replication: { user: 'none' },
  };
}

