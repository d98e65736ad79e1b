import { setTimeout as sleep } from 'node:timers/promises';
import type { ShardMap } from '../../topology/shard-map.js';
import type { FailoverResult } from '../failover/emergency-failover.js';
import type { HealPairState, HealStatus } from '../../topology/heal-records.js';
import { liveServices, type ServiceHeartbeat } from '../../topology/service-records.js';
import { failoverRetryMs, judge, remember, type HealSettings, type PairMemory, type PairObservation, type Verdict, type WitnessView } from './heal-rules.js';

/** One decision about one pair, with the evidence it was taken on (logged as a JSON line). */
export interface HealDecision {
  at: string;
  master: string;
  slave: string;
  /** `rebuild`: after a failover, the pair got a new slave (settings.rebuild). */
  verdict: Verdict['kind'] | 'rebuild';
  reason?: string;
  command?: string;
  evidence: PairObservation;
  failover?: FailoverResult;
  /** Moves marked 'aborting' so the pair could fail over: finish each with `shards move RANGE --abort`. */
  abortedMoves?: string[];
  /** What `pair rebuild-slave` reported (verdict `rebuild`). */
  rebuild?: unknown;
  error?: string;
}

/** What the supervisor needs of an engine: the live map, a look at a pair, and the emergency failover. */
export interface HealTarget {
  map(): Promise<ShardMap>;
  observe(master: string, slave: string): Promise<PairObservation>;
  failover(master: string): Promise<FailoverResult>;
  /**
   * Before a failover: marks 'aborting' every move of shards `master` serves that has not switched
   * (a dead source can finish no move; an unfinished one would keep the pair from failing over).
   * Returns the moves marked.
   */
  abortMoves?(master: string, reason: string): Promise<string[]>;
  /** `pair rebuild-slave`: builds `slave` (default: the one the map names, the old master) from `master`, records it in the map. */
  rebuild?(master: string, slave?: string): Promise<unknown>;
}

/**
 * The services as the third witness, and where the supervisor says what it sees (the topology
 * store's heal records): services probe the masters it suspects and answer in their heartbeats.
 */
export interface HealWitness {
  /** The services' heartbeats now. */
  services(): Promise<ReadonlyMap<string, ServiceHeartbeat>>;
  /** Writes this supervisor's status (every round). */
  publish(status: Pick<HealStatus, 'mode' | 'suspects' | 'pairs'>): Promise<void>;
  /**
   * The heal records in the store, expired ones included (kept an hour: record-set.ts), read once
   * at start: the failovers earlier supervisors made, so a restarted one keeps their flap window.
   */
  history?(): Promise<ReadonlyMap<string, HealStatus>>;
  /** Ask the services before a failover (--witness services); else only publish. */
  ask: boolean;
  /** How long to wait for their word after the first missed probe (then go on without it). */
  waitMs: number;
}

/** What the live services said about `master` since `since` (heal-rules.ts WitnessView). */
export function witnessOf(services: ReadonlyMap<string, ServiceHeartbeat>, master: string, since: number, now: number, waitMs: number): WitnessView {
  const live = liveServices(services, now);
  const view: WitnessView = { services: live.size, answered: 0, reaching: [], waitedMs: now - since, waitMs };
  for (const [id, beat] of live) {
    // The service echoes the suspicions it answered: `since` is this supervisor's own, so no clock
    // of another machine is compared with ours.
    // A service of the release before the echo sends none: its probe time is all there is.
    const word = beat.reach?.find((r) => r.host === master && (r.answering !== undefined ? r.answering.includes(since) : r.at >= since));
    if (word === undefined) continue;
    view.answered++;
    if (word.ok) view.reaching.push(id);
  }
  return view;
}

export const DEFAULT_HEAL_SETTINGS: HealSettings = { deadAfterProbes: 3, maxLagSeconds: 30, flapWindowMs: 3_600_000, mode: 'observe', rebuild: false, spares: [] };

/** The (master, slave) pairs of the map's ranges that have a slave: those can be failed over. */
export function pairsOf(map: ShardMap): Array<{ master: string; slave: string }> {
  const json = map.toJSON();
  const seen = new Map<string, string>();
  for (const r of [...json.ranges, ...json.modShards.ranges]) if (r.slave !== undefined && !seen.has(r.master)) seen.set(r.master, r.slave);
  return [...seen].map(([master, slave]) => ({ master, slave }));
}

function slaveOfMaster(map: ShardMap, master: string): string | undefined {
  return pairsOf(map).find((p) => p.master === master)?.slave;
}

/**
 * Probes every pair each round and acts on the verdicts (heal-rules.ts): in `act` mode a confirmed
 * dead master is failed over (the existing emergency failover: the old master is fenced read-only
 * if it answers and the map stops naming it master), in `observe` mode the command is
 * recommended. A decision is reported when a pair's verdict changes, so a long outage is one
 * line, not one per probe.
 */
export class HealSupervisor {
  private readonly memory = new Map<string, PairMemory>();
  private readonly lastFailover = new Map<string, number>();
  /** When a degraded pair (slave down) last got a slave rebuilt onto a spare. */
  private readonly lastSlaveRebuild = new Map<string, number>();
  private readonly lastReported = new Map<string, string>();
  /** Each master's pair as last judged, for the published status. */
  private readonly states = new Map<string, HealPairState>();
  /** Rebuilds running (not awaited by the rounds: a copy takes longer than a probe interval). */
  private readonly rebuilding = new Set<Promise<void>>();
  failovers = 0;
  private recalled = false;

  constructor(
    private readonly target: HealTarget,
    private settings: HealSettings,
    private readonly onDecision: (d: HealDecision) => void,
    private readonly now: () => number = Date.now,
    /** Every round's view of every pair, reported or not (metrics). */
    private readonly onObserved: (obs: PairObservation) => void = () => {},
    private readonly witness?: HealWitness,
  ) {}

  async round(): Promise<HealDecision[]> {
    if (!this.recalled) {
      this.recalled = true;
      await this.recallFailovers();
    }
    const pairs = pairsOf(await this.target.map());
    const out: HealDecision[] = [];
    // The services' word is read once a round, and only while a master is missed.
    let services: Promise<ReadonlyMap<string, ServiceHeartbeat> | undefined> | undefined;
    await Promise.all(pairs.map(async ({ master, slave }) => {
      const obs = await this.target.observe(master, slave);
      this.onObserved(obs);
      const memory = remember(this.memory.get(master) ?? { failedProbes: 0 }, obs, this.now());
      if (this.witness?.ask && !obs.masterReachable && memory.suspectSince !== undefined) {
        services ??= this.witness.services().catch(() => undefined);
        const heard = await services;
        // Heartbeats that cannot be read are no word (wait out waitMs), never "no service reaches it".
        obs.witness = heard === undefined
          ? { services: 1, answered: 0, reaching: [], waitedMs: this.now() - memory.suspectSince, waitMs: this.witness.waitMs }
          : witnessOf(heard, master, memory.suspectSince, this.now(), this.witness.waitMs);
      }
      const flapped = Math.max(this.lastFailover.get(master) ?? -Infinity, this.lastFailover.get(slave) ?? -Infinity);
      if (Number.isFinite(flapped)) memory.lastFailoverAt = flapped;
      this.memory.set(master, memory);
      const verdict = judge(obs, memory, this.settings, this.now());
      const decision: HealDecision = {
        at: new Date(this.now()).toISOString(), master, slave, verdict: verdict.kind, evidence: obs,
        ...('reason' in verdict ? { reason: verdict.reason } : {}),
        ...('command' in verdict ? { command: verdict.command } : {}),
      };
      let key = `${verdict.kind}|${verdict.cause}`;
      if (verdict.kind === 'failover') {
        try {
          const aborted = await this.target.abortMoves?.(master, `${master} died (${verdict.reason}): heal aborted the move to fail the pair over`);
          if (aborted !== undefined && aborted.length > 0) decision.abortedMoves = aborted;
          decision.failover = await this.target.failover(master);
          this.failovers++;
          if (this.settings.rebuild && this.target.rebuild !== undefined) this.startRebuild(decision.failover.newMaster);
          // Only a failover that happened counts for the flap window.
          const at = this.now();
          this.lastFailover.set(master, at);
          this.lastFailover.set(slave, at);
          this.memory.delete(master);
          key = `failover|${at}`;
        } catch (err) {
          // Refused or failed (a shard move held the range, the store was down): the master is
          // still dead, so it is tried again, backing off, and reported again only with a new error.
          decision.error = (err as Error).message;
          const attempts = (memory.failoverFailed?.attempts ?? 0) + 1;
          memory.failoverFailed = { attempts, error: decision.error.slice(0, 500), retryAt: this.now() + failoverRetryMs(attempts) };
          key = `refuse|failover-failed: ${memory.failoverFailed.error}`;
        }
      }
      // A pair whose slave is down gets one on a spare (act mode, --rebuild with --spares), once a flap window.
      if (verdict.kind === 'degraded' && this.settings.mode === 'act' && this.settings.rebuild && this.target.rebuild !== undefined && this.settings.spares.length > 0) {
        const last = this.lastSlaveRebuild.get(master);
        if (last === undefined || this.now() - last >= this.settings.flapWindowMs) {
          this.lastSlaveRebuild.set(master, this.now());
          this.startRebuild(master, { spareOnly: true });
        }
      }
      const previous = this.states.get(master);
      const shown = decision.error !== undefined ? `${decision.reason ?? ''}; the failover failed: ${decision.error}` : decision.reason;
      // Published as 'healthy' (its master is) with the reason: the status records of earlier
      // releases' readers (services, dashboards) know no 'degraded' and would refuse the record.
      // A failover that failed is published as refused: only one that happened is a 'failover',
      // which a supervisor started later counts for the flap window (recallFailovers).
      const published = verdict.kind === 'degraded' ? 'healthy' : decision.error !== undefined ? 'refuse' : verdict.kind;
      this.states.set(master, { master, slave, verdict: published, ...(shown !== undefined ? { reason: shown.slice(0, 2000) } : {}), since: previous?.verdict === published ? previous.since : this.now() });
      if (this.lastReported.get(master) !== key) {
        if (!(verdict.kind === 'healthy' && !this.lastReported.has(master))) out.push(decision);
        this.lastReported.set(master, key);
      }
    }));
    for (const d of out) this.onDecision(d);
    await this.publish(pairs.map((p) => p.master));
    return out;
  }

  /**
   * The failovers that earlier supervisors (this one before a restart, or another that held the
   * lease) published, within the flap window: they count as this supervisor's own, and it
   * publishes them on. Before, a restarted supervisor failed a pair over again minutes after the
   * last failover. A store that cannot be read gives no history (and no error).
   */
  private async recallFailovers(): Promise<void> {
    const records = await this.witness?.history?.().catch(() => undefined);
    for (const record of records?.values() ?? []) {
      for (const p of record.pairs) {
        if (p.verdict !== 'failover' || this.now() - p.since >= this.settings.flapWindowMs) continue;
        for (const host of [p.master, p.slave]) this.lastFailover.set(host, Math.max(this.lastFailover.get(host) ?? -Infinity, p.since));
        if ((this.states.get(p.master)?.since ?? -Infinity) < p.since) this.states.set(p.master, p);
      }
    }
  }

  /**
   * The status record: every pair's state, the failovers within the flap window of masters the map
   * no longer names (the history a restarted supervisor recalls), and the masters missed now (a
   * store that is down does not stop the supervisor).
   */
  private async publish(masters: string[]): Promise<void> {
    if (this.witness === undefined) return;
    const suspects = masters.flatMap((m) => {
      const since = this.memory.get(m)?.suspectSince;
      return since === undefined ? [] : [{ host: m, since }];
    });
    const current = new Set(masters);
    const failedOver = [...this.states.values()].filter((p) => !current.has(p.master) && p.verdict === 'failover' && this.now() - p.since < this.settings.flapWindowMs);
    const pairs = [...masters.flatMap((m) => (this.states.has(m) ? [this.states.get(m)!] : [])), ...failedOver];
    await this.witness.publish({ mode: this.settings.mode, suspects, pairs }).catch(() => undefined);
  }

  /**
   * The pair of `master` gets a slave again: the first spare host the map does not name, or else
   * the old master (a dev cluster restarts it; on a fleet it must be back). Reported as a `rebuild`
   * decision; a failure is reported and left to a human.
   */
  private startRebuild(master: string, options: { spareOnly?: boolean } = {}): void {
    const run = (async () => {
      const map = await this.target.map();
      // A spare is a host the map names nowhere (no range, no move).
      const named = new Set(map.hostNames());
      const spare = this.settings.spares.find((h) => !named.has(h));
      // A slave that is down is no host to rebuild onto: only a spare will do.
      if (spare === undefined && options.spareOnly === true) return;
      const decision: HealDecision = { at: new Date(this.now()).toISOString(), master, slave: spare ?? slaveOfMaster(map, master) ?? '?', verdict: 'rebuild', evidence: { master, slave: spare ?? '', masterReachable: true, slaveReachable: false } };
      try {
        decision.rebuild = await this.target.rebuild!(master, spare);
      } catch (err) {
        decision.error = (err as Error).message;
      }
      decision.at = new Date(this.now()).toISOString();
      this.onDecision(decision);
    })();
    const tracked = run.finally(() => this.rebuilding.delete(tracked));
    this.rebuilding.add(tracked);
  }

  /**
   * Acting or only observing, switched while running: an act-mode supervisor that holds no lease
   * (or lost it) observes until it is elected.
   */
  setMode(mode: HealSettings['mode']): void {
    this.settings = { ...this.settings, mode };
  }

  get mode(): HealSettings['mode'] {
    return this.settings.mode;
  }

  /** Waits for the rebuilds in flight (at shutdown). */
  async settle(): Promise<void> {
    await Promise.allSettled([...this.rebuilding]);
  }

  /** Rounds every `intervalMs` until `signal` aborts; a round that throws is reported and the next one runs. */
  async run(intervalMs: number, signal: AbortSignal, onError: (err: Error) => void): Promise<void> {
    while (!signal.aborted) {
      try {
        await this.round();
      } catch (err) {
        onError(err as Error);
      }
      await sleep(intervalMs, undefined, { signal }).catch(() => {});
    }
  }
}
