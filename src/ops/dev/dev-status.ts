import type { DevClusterView as DevCluster } from './dev-cluster-view.js';

/** One row of `dev status --json` (exactly these keys). */
export interface DevServerStatus {
  name: string;
  role: string;
  host: string;
  port: number;
  socket: string;
  pid: number | null;
  master: string | null;
  replicationLagSeconds: number | null;
}

/** `dev status` details for the text view. */
export interface DevServerDetail extends DevServerStatus {
  running: boolean;
  /** "-" for non-replicas; for slaves: running, connecting, stopped, or the last error. */
  replication: string;
}

/** Every server's status; replication state is read from the running slaves. */
export async function devStatus(cluster: DevCluster): Promise<DevServerDetail[]> {
  return Promise.all(cluster.state.servers.map(async (s) => {
    const inst = cluster.instance(s.name);
    const pid = inst.pid ?? null;
    const row: DevServerDetail = {
      name: s.name,
      role: s.role,
      host: inst.host,
      port: inst.port,
      socket: inst.socket,
      pid,
      master: s.master ?? null,
      replicationLagSeconds: null,
      running: pid !== null,
      replication: s.role === 'slave' ? 'down' : '-',
    };
    if (s.rebuild) row.replication = 'needs rebuild (shardkit pair rebuild-slave)';
    else if (pid !== null && s.role === 'slave') {
      try {
        const rows = await inst.admin<Array<Record<string, unknown>>>('SHOW SLAVE STATUS');
        const r = rows[0];
        if (!r) row.replication = 'not configured';
        else {
          const io = String(r.Slave_IO_Running);
          const sql = String(r.Slave_SQL_Running);
          const lag = r.Seconds_Behind_Master;
          row.replicationLagSeconds = lag === null || lag === undefined ? null : Number(lag);
          const error = String(r.Last_IO_Error || r.Last_SQL_Error || '');
          row.replication = io === 'Yes' && sql === 'Yes' ? 'running' : io === 'Connecting' ? `connecting${error ? `: ${error}` : ''}` : `stopped (io ${io}, sql ${sql})${error ? `: ${error}` : ''}`;
        }
      } catch (err) {
        row.replication = `unknown: ${(err as Error).message}`;
      }
    }
    return row;
  }));
}
