import { ShardKitError } from '../errors.js';
import type { MoveRecord } from '../topology/shard-map.js';
import { pruneExpired } from '../topology/record-set.js';
import { servicesNotKnowing } from '../topology/service-records.js';
import type { TopologyStore } from '../topology/topology-store.js';

/** The hosts a service must reach once the move switches: the target master and its slave. */
function targetHosts(move: MoveRecord): string[] {
  return [move.target.master, ...(move.target.slave !== undefined ? [move.target.slave] : [])];
}

/**
 * Just before the switch, under the freeze: a live service that cannot reach the target (one
 * started after the gate with a config that lacks it) makes the move abort rather than switch.
 * A store that cannot be read here is no reason to abort (the gate passed).
 */
export async function refuseUnknownTarget(store: TopologyStore, move: MoveRecord): Promise<void> {
  if (store.services === undefined) return;
  const hosts = targetHosts(move);
  const records = await store.services.readAll().catch(() => undefined);
  if (records === undefined) return;
  // Only what services lack: their map versions move on with the freeze itself.
  const waiting = servicesNotKnowing(records, hosts, 0, Date.now());
  if (waiting.length === 0) return;
  const first = waiting[0]!;
  throw new ShardKitError('SHARD_UNAVAILABLE', `${waiting.length} running service(s) cannot reach ${first.missing.join(', ')} (first: ${first.id}, pid ${first.record.pid} on ${first.record.hostname}; started after the move's check?): not switching. Publish the pair's hosts in the topology store ('shardkit topology hosts add'; 'dev add-pair' does it) or add them to its config, then move again`);
}

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
  const hosts = targetHosts(move);
  const deadline = Date.now() + waitMs;
  let reported = 0;
  await pruneDead(store);
  for (;;) {
    let records;
    try {
      records = await store.services.readAll();
    } catch (err) {
      // A store that fails a read (or holds a record that does not parse) is no verdict: the
      // copy behind this move is worth more than one read; the deadline still holds.
      if (Date.now() >= deadline) throw new ShardKitError('SHARD_UNAVAILABLE', `cannot read the services' heartbeats (${(err as Error).message}), still after ${waitMs} ms: not freezing`);
      await new Promise((r) => setTimeout(r, 100));
      continue;
    }
    const waiting = servicesNotKnowing(records, hosts, mapVersion, Date.now());
    if (waiting.length === 0) return;
    const first = waiting[0]!;
    const w: ServicesWaiting = { services: waiting.length, first: { id: first.id, hostname: first.record.hostname, pid: first.record.pid, missing: first.missing } };
    if (Date.now() - reported >= 1000) {
      reported = Date.now();
      report(w);
    }
    if (Date.now() >= deadline) {
      const stale = first.record.mapVersion < mapVersion;
      throw new ShardKitError('SHARD_UNAVAILABLE', `${waiting.length} running service(s) cannot reach ${hosts.join(' and ')} yet, still after ${waitMs} ms (first: ${first.id}, pid ${first.record.pid} on ${first.record.hostname}, ${stale ? `routing by map version ${first.record.mapVersion}, older than the move's ${mapVersion}` : `its config does not declare ${first.missing.join(', ')}`}): not freezing. Publish the pair's hosts in the topology store ('shardkit topology hosts add'; 'dev add-pair' does it) or add them to every service's config (running services read both again by themselves), then move again`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Deletes the heartbeats and heal records of processes that died long ago (kill -9 leaves them;
 * every reader skips them): once per move, before its gate. A store that fails here is no reason
 * to stop the move.
 */
export async function pruneDead(store: TopologyStore, now = Date.now()): Promise<void> {
  for (const set of [store.services, store.heal]) {
    if (set === undefined) continue;
    const records = await set.readAll().catch(() => undefined);
    if (records !== undefined) await pruneExpired<{ at: number; ttlMs: number }>(set, records, now);
  }
}
