import { pinterestId } from '../../src/ids/pinterest-id.js';
import type { DevCluster } from '../../src/ops/dev-cluster.js';
import { pgServer } from '../../src/ops/dev/dev-postgres.js';

/** Acknowledged pins on shards 0..1 that the PostgreSQL server `host` does not hold. */
export async function missingOnPg(c: DevCluster, host: string, acked: Array<{ id: bigint }>): Promise<bigint[]> {
  const server = pgServer(c, host);
  const have = new Set<string>();
  for (const shard of [0, 1]) {
    const rows = await server.sql<{ id: string }>(`SELECT local_id::text AS id FROM db${String(shard).padStart(5, '0')}.pins`, [], 'shardkit');
    for (const r of rows) have.add(`${shard}:${r.id}`);
  }
  return acked.map((a) => a.id).filter((id) => {
    const p = pinterestId.decode(id);
    return !have.has(`${p.shard}:${p.localId}`);
  });
}
