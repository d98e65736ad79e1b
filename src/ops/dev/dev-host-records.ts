import { createTopologyStore } from '../../topology/index.js';
import type { HostRecord } from '../../topology/host-records.js';
import type { DevClusterView as DevCluster } from './dev-cluster-view.js';

/**
 * Publishes a dev pair's hosts in the topology store (#28: hosts are topology), so services that
 * run with their own config files reach the pair without anyone editing those files. Address and
 * port only: each service connects with its config's credentials.
 */
export async function publishHosts(cluster: DevCluster, engine: HostRecord['engine'], hosts: Array<{ name: string; port: number; role: HostRecord['role'] }>): Promise<void> {
  const store = createTopologyStore(cluster.config().topologyStore, { dataDir: cluster.dir });
  try {
    if (store.hosts === undefined) return;
    for (const h of hosts) await store.hosts.put(h.name, { address: '127.0.0.1', port: h.port, role: h.role, engine });
  } finally {
    await store.close();
  }
}
