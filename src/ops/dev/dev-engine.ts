import { DevCluster } from './dev-cluster.js';
import { devPgDown, devPgStatus } from './dev-postgres.js';
import type { DevServerDetail } from './dev-status.js';

/** `dev status` of a cluster of either engine. */
export async function devClusterStatus(c: DevCluster): Promise<DevServerDetail[]> {
  return c.state.engine === 'postgres' ? devPgStatus(c) : c.status();
}

/** `dev down` of a cluster of either engine. */
export async function devClusterDown(c: DevCluster): Promise<string[]> {
  return c.state.engine === 'postgres' ? devPgDown(c) : c.down();
}

