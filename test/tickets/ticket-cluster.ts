import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { MariadbInstance } from '../../src/ops/mariadb/mariadb-instance.js';
import { ticketServerSettings } from '../../src/tickets/ticket-server-settings.js';
import type { TicketsConfigInput } from '../../src/tickets/tickets-config.js';

export const SEQUENCES = ['photos', 'accounts', 'offline_tasks', 'groups'];

/** N real ticket servers (mariadbd via the project's own MariadbInstance) in a temp dir. */
export interface TicketCluster {
  dir: string;
  instances: MariadbInstance[];
  /** A tickets config pointing at them over their sockets, with short timeouts for tests. */
  config: TicketsConfigInput;
  stop(): Promise<void>;
}

export async function startTicketCluster(n: number, options: { prefix?: string } = {}): Promise<TicketCluster> {
  const dir = mkdtempSync(join(tmpdir(), options.prefix ?? 'sk-tickets-'));
  const instances: MariadbInstance[] = [];
  try {
    for (let i = 1; i <= n; i++) {
      instances.push(await MariadbInstance.create({ name: `ticket${i}`, dir: join(dir, `t${i}`), serverId: 900 + i, settings: ticketServerSettings(n, i) }));
    }
    await Promise.all(instances.map((inst) => inst.start()));
  } catch (err) {
    await Promise.all(instances.map((inst) => inst.kill().catch(() => undefined)));
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  const config: TicketsConfigInput = {
    servers: instances.map((inst) => ({ name: inst.name, host: inst.host, port: inst.port, socket: inst.socket, user: userInfo().username })),
    sequences: SEQUENCES,
    // Generous for a loaded 2-core test machine; a killed server fails at once regardless.
    connectTimeoutMs: 2000,
    queryTimeoutMs: 2000,
    retryAfterMs: 200,
  };
  return {
    dir,
    instances,
    config,
    async stop() {
      await Promise.all(instances.map((inst) => inst.stop({ timeoutMs: 10_000 }).catch(() => inst.kill())));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Residue of an ID with 2 servers, as a label. */
export function parity(id: bigint): 'odd' | 'even' {
  return id % 2n === 1n ? 'odd' : 'even';
}
