import { liveSuspects } from '../topology/heal-records.js';
import { MAX_ANSWERING, type ServiceReach } from '../topology/service-records.js';
import type { TopologyStore } from '../topology/topology-store.js';
import type { ShardBackend } from '../storage/shard-backend.js';

/** How long a witness probe of a suspected master may take: one that takes longer did not reach it. */
export const WITNESS_PROBE_MS = 1000;

/**
 * The third witness (#31): the masters the heal supervisors suspect, each probed through this
 * service's own pool (the path its requests take). A supervisor cut off from a master that the
 * services still reach must not fail it over. Nothing to do, and no store read beyond one, when
 * no supervisor suspects anything.
 */
export async function witnessSuspects(topology: TopologyStore, backend: ShardBackend, now = Date.now()): Promise<ServiceReach[] | undefined> {
  if (topology.heal === undefined || backend.ping === undefined) return undefined;
  const suspects = liveSuspects(await topology.heal.readAll(), now, MAX_ANSWERING);
  if (suspects.size === 0) return undefined;
  const hosts = [...suspects.keys()].filter((h) => backend.knowsHost?.(h) !== false).slice(0, 1000);
  const TIMED_OUT = Symbol('timed out');
  const answers = await Promise.all(hosts.map(async (host): Promise<ServiceReach | undefined> => {
    let timer: NodeJS.Timeout | undefined;
    try {
      const r = await Promise.race([
        backend.ping!(host),
        new Promise<typeof TIMED_OUT>((resolve) => {
          timer = setTimeout(() => resolve(TIMED_OUT), WITNESS_PROBE_MS);
        }),
      ]);
      // No answer in time (a busy pool, a frozen server) is no word either way: the supervisor
      // waits for one, and goes on without it only after its wait.
      if (r === TIMED_OUT) return undefined;
      return { host, ok: true, at: Date.now(), answering: suspects.get(host)! };
    } catch (err) {
      return { host, ok: false, at: Date.now(), answering: suspects.get(host)!, error: ((err as Error).message ?? String(err)).slice(0, 500) };
    } finally {
      clearTimeout(timer);
    }
  }));
  return answers.filter((a): a is ServiceReach => a !== undefined);
}
