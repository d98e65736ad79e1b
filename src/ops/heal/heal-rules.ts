/**
 * When a master is dead and what to do about it: pure functions of what the supervisor observed,
 * so every rule is tested without servers (test/ops/heal-rules.test.ts). The rules follow
 * Orchestrator and VTOrc: unreachable from here is not enough; the master's own slave must have
 * lost it too, or a supervisor cut off from the fleet would fail over a healthy master.
 */

/** One probe round's view of a pair. */
export interface PairObservation {
  master: string;
  slave: string;
  /** The master answered a connect and a trivial query within the probe timeout. */
  masterReachable: boolean;
  /** What the master's error was when it did not. */
  masterError?: string;
  /** The slave answered (its replication status could be read). */
  slaveReachable: boolean;
  /** The slave's IO thread is connected to the master ('Yes'); 'Connecting' or 'No' is lost. */
  slaveIoConnected?: boolean;
  /** The slave's SQL thread runs and has no error: it can apply what it got and be promoted. */
  slaveSqlHealthy?: boolean;
  slaveError?: string;
  /** Seconds behind its master when known (MariaDB reports none once the IO thread is down). */
  slaveLagSeconds?: number | null;
  /** The third witness, when the supervisor asks the services (--witness services). */
  witness?: WitnessView;
}

/** What the live services said about an unreachable master since this supervisor first missed it. */
export interface WitnessView {
  /** Live services (a heartbeat that has not run out). */
  services: number;
  /** Of those, the ones that probed the master since the suspicion began. */
  answered: number;
  /** Services that reached it then (their ids). */
  reaching: string[];
  /** ms since the suspicion began. */
  waitedMs: number;
  /** How long to wait for the services' word before going on without it. */
  waitMs: number;
}

export interface HealSettings {
  /** Consecutive failed probes of a master before it counts as unreachable. */
  deadAfterProbes: number;
  /** A slave further behind than this is not promoted (its lag cannot be made up). */
  maxLagSeconds: number;
  /** No second automatic failover of the same pair within this window (ms). */
  flapWindowMs: number;
  mode: 'observe' | 'act';
  /** Act mode: after a failover, rebuild the pair's slave (`pair rebuild-slave`) without a human. */
  rebuild: boolean;
  /** Hosts (declared in the config) a rebuild may use as the new slave, before the old master. */
  spares: string[];
}

/** What the supervisor remembers between rounds, per master. */
export interface PairMemory {
  failedProbes: number;
  /** Consecutive probes that found the master answering but its slave down or not replicating. */
  slaveFailedProbes?: number;
  /** When the current run of failed probes began (ms). */
  suspectSince?: number;
  /** When this supervisor last failed over a pair with this master or slave (ms). */
  lastFailoverAt?: number;
  /**
   * This master's failover was tried and refused or failed (a move held its range, a store was
   * down): not a failover for the flap window, tried again from `retryAt` (backing off).
   */
  failoverFailed?: { attempts: number; error: string; retryAt: number };
}

/**
 * `cause` names the rule that decided, without the figures of the reason (probe counts, seconds):
 * the supervisor reports a pair again only when its verdict or cause changes.
 */
export type Verdict =
  | { kind: 'healthy'; cause: 'healthy' }
  | { kind: 'degraded'; cause: string; reason: string }
  | { kind: 'suspect'; cause: string; reason: string }
  | { kind: 'failover'; cause: 'dead'; reason: string }
  | { kind: 'recommend'; cause: 'dead'; reason: string; command: string }
  | { kind: 'refuse'; cause: string; reason: string };

/** How long to wait before trying a failed failover again (ms): 1, 2, 4 ... s, up to a minute. */
export function failoverRetryMs(attempts: number): number {
  return Math.min(60_000, 1000 * 2 ** Math.max(0, attempts - 1));
}

export function judge(obs: PairObservation, memory: PairMemory, settings: HealSettings, now: number): Verdict {
  if (obs.masterReachable) {
    // The master serves, but the pair has no slave to fail over to until this is repaired: said
    // once (and paged with --webhook), after as many probes as a dead master takes.
    const down = slaveDown(obs);
    if (down !== undefined && (memory.slaveFailedProbes ?? 0) >= settings.deadAfterProbes) {
      return { kind: 'degraded', cause: down.cause, reason: `${obs.master} answers, but its slave ${obs.slave} ${down.what} (${memory.slaveFailedProbes} probes): the pair cannot fail over until it is repaired (pair rebuild-slave; heal --rebuild does it onto a --spares host)` };
    }
    return { kind: 'healthy', cause: 'healthy' };
  }
  const failed = memory.failedProbes;
  if (failed < settings.deadAfterProbes) return { kind: 'suspect', cause: 'unreachable', reason: `${obs.master} unreachable (${failed} of ${settings.deadAfterProbes} probes): ${obs.masterError ?? 'no answer'}` };
  if (!obs.slaveReachable) return { kind: 'refuse', cause: 'both-unreachable', reason: `${obs.master} and its slave ${obs.slave} are both unreachable from here: the supervisor may be the one cut off; nothing is done (${obs.slaveError ?? 'no answer'})` };
  if (obs.slaveIoConnected) return { kind: 'suspect', cause: 'slave-connected', reason: `${obs.master} unreachable from here, but its slave ${obs.slave} is still connected to it: not dead (a partition between the supervisor and the master?)` };
  const w = obs.witness;
  if (w !== undefined && w.reaching.length > 0) return { kind: 'suspect', cause: 'witness-reaching', reason: `${obs.master} unreachable from here and from its slave, but ${w.reaching.length} of ${w.services} live service(s) still reach it (${w.reaching[0]}): not dead (the supervisor and the slave cut off from it?)` };
  if (w !== undefined && w.answered < w.services && w.waitedMs < w.waitMs) return { kind: 'suspect', cause: 'witness-waiting', reason: `${obs.master} unreachable from here and from its slave; waiting for the services' word (${w.answered} of ${w.services} answered, ${Math.round(w.waitedMs)} of ${w.waitMs} ms)` };
  const witnessed = w === undefined ? '' : w.answered === w.services ? `, as did every live service (${w.services})` : `; ${w.answered} of ${w.services} live service(s) answered within ${w.waitMs} ms, none reached it`;
  const reason = `${obs.master} unreachable for ${failed} probes and its slave ${obs.slave} lost it too${witnessed}`;
  if (!obs.slaveSqlHealthy) return { kind: 'refuse', cause: 'slave-broken', reason: `${reason}, but ${obs.slave} cannot apply what it received (${obs.slaveError || 'SQL thread stopped'}): promoting it would lose data; repair it or fail over by hand` };
  if (obs.slaveLagSeconds != null && obs.slaveLagSeconds > settings.maxLagSeconds) return { kind: 'refuse', cause: 'slave-lagging', reason: `${reason}, but ${obs.slave} is ${obs.slaveLagSeconds} s behind (more than ${settings.maxLagSeconds} s): not promoted` };
  if (memory.lastFailoverAt !== undefined && now - memory.lastFailoverAt < settings.flapWindowMs) {
    return { kind: 'refuse', cause: 'flapping', reason: `${reason}, but this pair failed over ${Math.round((now - memory.lastFailoverAt) / 1000)} s ago (anti-flapping window ${Math.round(settings.flapWindowMs / 1000)} s): a human decides` };
  }
  const failedBefore = memory.failoverFailed;
  if (failedBefore !== undefined && now < failedBefore.retryAt) {
    // The same refusal is one line however long it lasts (the cause carries the error, not the time).
    return { kind: 'refuse', cause: `failover-failed: ${failedBefore.error}`, reason: `${reason}, but its failover failed (${failedBefore.error}): tried again from ${new Date(failedBefore.retryAt).toISOString()} (attempt ${failedBefore.attempts + 1})` };
  }
  if (settings.mode === 'observe') return { kind: 'recommend', cause: 'dead', reason, command: `shardkit failover ${obs.master} --emergency` };
  return { kind: 'failover', cause: 'dead', reason };
}

/**
 * What is wrong with a slave whose master answers, if anything. A stopped SQL thread without an
 * error is not (a backup stops it while it copies the slave); an error, a lost IO thread or no
 * answer is.
 */
export function slaveDown(obs: PairObservation): { cause: string; what: string } | undefined {
  if (!obs.slaveReachable) return { cause: 'slave-unreachable', what: `does not answer (${obs.slaveError ?? 'no answer'})` };
  if (obs.slaveIoConnected === false) return { cause: 'slave-disconnected', what: `is not replicating from it (${obs.slaveError || 'IO thread not connected'})` };
  if (obs.slaveSqlHealthy === false && obs.slaveError) return { cause: 'slave-broken', what: `cannot apply what it receives (${obs.slaveError})` };
  return undefined;
}

/** The memory after a round: probes counted while the master stays unreachable, reset once it answers. */
export function remember(memory: PairMemory, obs: PairObservation, now = Date.now()): PairMemory {
  if (obs.masterReachable) {
    const { suspectSince: _s, failoverFailed: _f, slaveFailedProbes, ...rest } = memory;
    const slaveMissed = slaveDown(obs) === undefined ? 0 : (slaveFailedProbes ?? 0) + 1;
    return { ...rest, failedProbes: 0, ...(slaveMissed > 0 ? { slaveFailedProbes: slaveMissed } : {}) };
  }
  return { ...memory, failedProbes: memory.failedProbes + 1, suspectSince: memory.suspectSince ?? now };
}
