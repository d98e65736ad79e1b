import { casMoveState } from '../../moves/move-state.js';
import { changeShardMap } from '../../topology/change-shard-map.js';
import { ShardMap, type ShardMapJson } from '../../topology/shard-map.js';
import { servicesNotKnowing } from '../../topology/service-records.js';
import type { TopologyStore } from '../../topology/topology-store.js';
import { failoverIds, freezeForFailover, refuseMoveTarget, releaseFailover, staleFailoverIds, switchFailover } from './failover-freeze.js';

/**
 * The map's side of a planned failover, the same on every engine (MariaDB: planned-failover.ts;
 * PostgreSQL: pg-failover.ts, pg-fleet-failover.ts), which differ only in how they fence the
 * master and promote its slave: an earlier run's stale freeze lifted, the master's object ranges
 * frozen (services hold writes to them), then either the one compare-and-set that switches them
 * to the slave, or the freeze lifted again.
 */
export class FailoverFreeze {
  private constructor(private readonly store: TopologyStore, private readonly hosts: string[], private readonly master: string, readonly ids: readonly string[], private readonly frozen: boolean, private readonly version: number) {}

  /**
   * The store's map (seeded from `seed` when it holds none yet, as a service does on start), an
   * earlier failover's freeze of `master` lifted when its budget ran out, then (with `freeze`)
   * every object range of `master` frozen for `holdMs`.
   */
  static async begin(store: TopologyStore, seed: ShardMapJson, hosts: string[], master: string, slave: string, options: { holdMs: number; freeze?: boolean; refuseMoveTargets?: boolean; log?: (m: string) => void }): Promise<FailoverFreeze> {
    const log = options.log ?? (() => undefined);
    const map = (await changeShardMap(store, (m) => m.toJSON(), { seed: ShardMap.fromJSON(seed), hosts })).after;
    const stale = staleFailoverIds(map, master);
    if (stale.length > 0) {
      log(`lifting the freeze of an earlier failover of ${master} that did not finish (${stale.join(', ')})`);
      // Re-checked on the map the compare-and-set applies to: a failover that froze meanwhile is refused, not lifted.
      await casMoveState(store, (m) => releaseFailover(m, staleFailoverIds(m, master)), { hosts });
    }
    if (options.freeze === false) {
      if (options.refuseMoveTargets) refuseMoveTarget(map, master);
      return new FailoverFreeze(store, hosts, master, [], false, map.version);
    }
    const frozen = await casMoveState(store, (m) => freezeForFailover(m, master, slave, { holdMs: options.holdMs, ...(options.refuseMoveTargets ? { refuseMoveTargets: true } : {}) }), { hosts });
    const ids = failoverIds(frozen, master);
    log(`froze the object ranges of ${master} (${ids.join(', ') || 'none'}; hold budget ${options.holdMs} ms)`);
    return new FailoverFreeze(store, hosts, master, ids, true, frozen.version);
  }

  /**
   * Waits, up to `waitMs`, until every live service (heartbeat records) routes by the frozen map,
   * so that it holds its writes before the master is fenced by a stop (PostgreSQL), whose refusals
   * are not safe to retry as a read-only refusal is. Returns how many still did not; a store that
   * keeps no heartbeats, or fails to be read, has none to wait for.
   */
  private async awaitServices(slave: string, waitMs: number): Promise<number> {
    const deadline = Date.now() + waitMs;
    for (;;) {
      const records = await this.store.services?.readAll().catch(() => undefined);
      const waiting = records === undefined ? 0 : servicesNotKnowing(records, [slave], this.version, Date.now()).length;
      if (waiting === 0 || Date.now() >= deadline) return waiting;
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  /**
   * Before a PostgreSQL fence: a quarter of the hold budget for the services to see the freeze
   * (awaitServices); returns the quarter left for the writes under way to drain, the rest being
   * for the stop or the sessions' end, the replay and the promotion.
   */
  async beforeFence(slave: string, holdMs: number, log: (m: string) => void): Promise<number> {
    const quarter = Math.min(1000, holdMs / 4);
    const waiting = await this.awaitServices(slave, quarter);
    if (waiting > 0) log(`${waiting} service(s) have not seen the freeze of ${this.master} yet: their writes to it may be refused for a moment`);
    return quarter;
  }

  /** THE compare-and-set: the frozen ranges (and the master's mod shards) switch to its slave; the new map's version. */
  async switch(): Promise<number> {
    return (await casMoveState(this.store, (m) => switchFailover(m, this.master, this.ids, { promoteUnfrozen: !this.frozen }), { hosts: this.hosts })).version;
  }

  /** The failover did not happen: the freeze lifted, the master serves as before. */
  async release(): Promise<void> {
    await casMoveState(this.store, (m) => releaseFailover(m, this.ids), { hosts: this.hosts });
  }
}

/**
 * Undo, best effort and in order: a step that fails is logged (the operator finishes it by hand)
 * and the next still runs; the caller then throws its own error, not an undo step's.
 */
export async function undoSteps(log: (m: string) => void, steps: ReadonlyArray<readonly [what: string, fn: () => Promise<unknown>] | false>): Promise<void> {
  for (const step of steps) {
    if (step === false) continue;
    try {
      await step[1]();
    } catch (err) {
      log(`undo: could not ${step[0]}: ${(err as Error).message}`);
    }
  }
}
