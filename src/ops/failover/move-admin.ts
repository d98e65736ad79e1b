import type { MoveAdmin } from '../../moves/mariadb/move-admin.js';
import { parallelDumpCopy } from './parallel-dump-copy.js';
import type { HostAdmin } from './host-admin.js';

/** The MariaDB mover's admin access from the fleet tools' own (dev cluster sockets or config accounts). */
export function moveAdmin(admin: HostAdmin): MoveAdmin {
  return {
    connect: (host) => admin.connect(host),
    address: (host) => admin.address(host),
    replication: admin.replication,
    dumpCopy: (from, to, databases, options) => parallelDumpCopy(admin, from, to, databases, options.streams ?? 1, options),
  };
}
