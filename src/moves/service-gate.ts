import { ShardKitError } from '../errors.js';
import type { MoveRecord } from '../topology/shard-map.js';
import { servicesNotKnowing } from '../topology/service-records.js';
import type { TopologyStore } from '../topology/topology-store.js';

/** Who is still waited for, as the runner reports it (about once a second). */
export interface ServicesWaiting {
  services: number;
  first: { id: string; hostname: string; pid: number; missing: string[] };
}

/**
 * The service gate (#28): before a move freezes, every live service (a heartbeat record that has
 * not run out) must route by a map at least `mapVersion` (it has heard of the move) and have an
 * address for the target master and slave. A service whose config lacks the new pair would
 * otherwise answer HOST_UNKNOWN for the whole range from the switch on. Waits up to `waitMs`
 * (heartbeats come on every map change and every few seconds), then gives up with nothing
 * frozen, naming the services. A store without heartbeats has nothing to wait for.
 */
export async function waitForServices(store: TopologyStore, move: MoveRecord, mapVersion: number, waitMs: number, report: (w: ServicesWaiting) => void): Promise<void> {
  if (store.services === undefined) return;
  const hosts = [move.target.master, ...(move.target.slave !== undefined ? [move.target.slave] : [])];
  const deadline = Date.now() + waitMs;
  let reported = 0;
  for (;;) {
    const waiting = servicesNotKnowing(await store.services.readAll(), hosts, mapVersion, Date.now());
    if (waiting.length === 0) return;
    const first = waiting[0]!;
    const w: ServicesWaiting = { services: waiting.length, first: { id: first.id, hostname: first.record.hostname, pid: first.record.pid, missing: first.missing } };
    if (Date.now() - reported >= 1000) {
      reported = Date.now();
      report(w);
    }
    if (Date.now() >= deadline) {
      const stale = first.record.mapVersion < mapVersion;
      throw new ShardKitError('SHARD_UNAVAILABLE', `${waiting.length} running service(s) cannot reach ${hosts.join(' and ')} yet, still after ${waitMs} ms (first: ${first.id}, pid ${first.record.pid} on ${first.record.hostname}, ${stale ? `routing by map version ${first.record.mapVersion}, older than the move's ${mapVersion}` : `its config does not declare ${first.missing.join(', ')}`}): not freezing. Add the pair's hosts to every service's config (a running service reads its config file again by itself), then move again`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}
