/**
 * One chaos run: the faults of a schedule, one after another, against a ChaosFleet under load.
 * After each fault the fleet is repaired as an operator's runbook says (`dev up` restarts what
 * died, `pair rebuild-slave` where a pair lost its slave) and must become whole again within a
 * bound. At the end every acknowledged write is read back and `shards verify` must be clean.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { ShardKit } from '../../src/kit/shard-kit.js';
import { pairOf } from '../../src/ops/dev/dev-cluster-state.js';
import { liveShardMap } from '../../src/ops/dev/dev-writable.js';
import { pairsOf } from '../../src/ops/heal/heal-supervisor.js';
import { spawn } from 'node:child_process';
import { CLI, cliProcess, ROOT } from '../cli/cli-harness.js';
import { ChaosFleet } from './chaos-fleet.js';
import type { Fault } from './chaos-schedule.js';
import type { ChaosEngineName } from './chaos-engines.js';

export interface FaultOutcome {
  kind: Fault['kind'];
  pair: number;
  ms: number;
  /** kill -9 / a long stop of a master: the kill until the first write acknowledged on its shards again. */
  writesBackMs?: number;
  /** The supervisor failed the pair over. */
  failedOver: boolean;
  /** ... and rebuilt its slave (heal --rebuild): the pair whole again without the runbook. */
  rebuiltByHeal?: boolean;
  /** A move that rolled itself back (refused, nothing changed). */
  aborted?: boolean;
  /** Repair start until every pair was whole again. */
  convergeMs: number;
}

export interface ChaosSummary {
  seed: number;
  outcomes: FaultOutcome[];
  acked: number;
  lost: string[];
  doubleWriters: ChaosFleet['doubleWriters'];
  /** Failovers during faults that must not cause one (partitions of the services, jitter, a short stop). */
  falseFailovers: number;
  verifyClean: boolean;
  errors: Record<string, number>;
  durationMs: number;
}

const CONVERGE_BOUND_MS = 180_000;

async function run(args: string[]): Promise<string> {
  const r = await cliProcess(args);
  if (r.code !== 0) throw new Error(`shardkit ${args.join(' ')} exited ${r.code}: ${r.stderr.trim()}`);
  return r.stdout;
}

/** The current master and slave of pair `p` (1-based) by the live map: a failover swaps names. */
async function pairHosts(fleet: ChaosFleet, p: number): Promise<{ master: string; slave: string }> {
  const c = fleet.cluster();
  const inPair = new Set(c.state.servers.filter((s) => (s.pair ?? pairOf(s)) === p).map((s) => s.name));
  const found = pairsOf(await liveShardMap(c)).find((x) => inPair.has(x.master));
  if (found === undefined) throw new Error(`pair ${p} masters no range`);
  return found;
}

/** Restart what is down, rebuild a slave that does not replicate; then wait until every pair is whole. */
async function repair(fleet: ChaosFleet, log: (m: string) => void): Promise<number> {
  const started = Date.now();
  let rebuilt = false;
  for (;;) {
    const problem = await fleet.health();
    if (problem === undefined) break;
    if (Date.now() - started > CONVERGE_BOUND_MS) throw new Error(`the fleet did not become whole within ${CONVERGE_BOUND_MS} ms: ${problem}`);
    const c = fleet.cluster();
    if (c.state.servers.some((s) => !fleet.engine.isRunning(c, s.name))) {
      log(`repair: dev up (${problem})`);
      await run(['dev', 'up', '--dir', fleet.dir]);
      await fleet.afterRestart();
      continue;
    }
    const map = await liveShardMap(c);
    const broken = [];
    for (const { master, slave } of pairsOf(map)) {
      const rebuild = c.state.servers.find((s) => s.name === slave)?.rebuild === true;
      if (rebuild || (await fleet.engine.slaveBroken(c, slave))) broken.push(master);
    }
    if (broken.length > 0 && !rebuilt) {
      for (const master of broken) {
        log(`repair: pair rebuild-slave ${master} (${problem})`);
        await run(['pair', 'rebuild-slave', master, '--dir', fleet.dir]);
      }
      await fleet.afterRestart();
      rebuilt = true;
      continue;
    }
    await sleep(250);
  }
  return Date.now() - started;
}

async function apply(fleet: ChaosFleet, fault: Fault, log: (m: string) => void): Promise<{ writesBackMs?: number; failedOver: boolean; rebuiltByHeal?: boolean; aborted?: boolean }> {
  const failoverOf = (master: string, since: number) => fleet.heal.decisions.find((d) => d.verdict === 'failover' && d.master === master && d.receivedAt >= since);
  switch (fault.kind) {
    case 'kill-master':
    case 'stop-master': {
      const { master } = await pairHosts(fleet, fault.pair);
      const shards = await fleet.shardsOf(master);
      const c = fleet.cluster();
      const t0 = Date.now();
      // From the moment the master is down: PostgreSQL's kill stops the postmaster, lists and kills
      // its backends, and a backend may still commit (to its synchronous standby) meanwhile.
      let down = t0;
      if (fault.kind === 'kill-master') {
        await fleet.engine.kill(c, master);
        down = Date.now();
        // The supervisor must fail it over by itself.
        await fleet.heal.next((d) => d.verdict === 'failover' && d.master === master && d.receivedAt >= t0);
      } else {
        const pids = fleet.engine.pids(c, master);
        for (const pid of pids) try { process.kill(pid, 'SIGSTOP'); } catch { /* gone */ }
        await sleep(fault.ms);
        for (const pid of pids) try { process.kill(pid, 'SIGCONT'); } catch { /* the failover shot it */ }
      }
      const writesBackMs = shards.size > 0 ? await fleet.ackedAfter(down, shards) : undefined;
      // The supervisor may still be deciding (a stop it suspected: failover or healthy comes next).
      // Its verdict is awaited, so a late failover is never taken for the next fault's doing.
      const last = fleet.heal.decisions.filter((d) => d.master === master && d.receivedAt >= t0).at(-1);
      if (last?.verdict === 'suspect') await fleet.heal.next((d) => d.master === master && d.receivedAt >= last.receivedAt && d !== last && d.verdict !== 'suspect');
      const failover = failoverOf(master, t0);
      // heal --rebuild makes the pair whole by itself: the old master (restarted) becomes its slave.
      const rebuild = failover === undefined ? undefined : await fleet.heal.next((d) => d.verdict === 'rebuild' && d.receivedAt >= failover.receivedAt && d.master === failover.failover?.newMaster);
      if (rebuild?.error !== undefined) log(`heal's rebuild failed: ${rebuild.error}`);
      fleet.hits.push({ master, from: t0, to: Date.now() });
      return { ...(writesBackMs !== undefined ? { writesBackMs } : {}), failedOver: failover !== undefined, ...(rebuild !== undefined ? { rebuiltByHeal: rebuild.error === undefined } : {}) };
    }
    case 'kill-slave': {
      const { slave } = await pairHosts(fleet, fault.pair);
      await fleet.engine.kill(fleet.cluster(), slave);
      return { failedOver: false };
    }
    case 'kill-service':
      await fleet.restartService(fault.service);
      return { failedOver: false };
    case 'kill-supervisor':
      await fleet.killHeal();
      fleet.heal = await fleet.startHeal();
      return { failedOver: false };
    case 'partition-service':
    case 'jitter': {
      const { master } = await pairHosts(fleet, fault.pair);
      const hit = fault.kind === 'jitter' ? [...fleet.proxies.values()] : [fleet.proxies.get(master)!];
      const mode = fault.kind === 'jitter' ? { kind: 'delay' as const, ms: 0, jitterMs: 200, loss: 0.05 } : { kind: 'blackhole' as const };
      for (const p of hit) p.mode = mode;
      // Jitter and loss on the supervisor's way to every server too: the false-failover target.
      if (fault.kind === 'jitter') await fleet.supervisorPath([...fleet.proxies.keys()], mode, fault.ms);
      else await sleep(fault.ms);
      for (const p of hit) p.mode = { kind: 'pass' };
      return { failedOver: false };
    }
    case 'partition-supervisor': {
      // The supervisor loses the master; its slave and the services still reach it: not dead.
      const { master } = await pairHosts(fleet, fault.pair);
      await fleet.supervisorPath([master], { kind: 'blackhole' }, fault.ms);
      return { failedOver: false };
    }
    case 'planned-failover': {
      const { master } = await pairHosts(fleet, fault.pair);
      await run(['failover', master, '--dir', fleet.dir]);
      return { failedOver: false };
    }
    case 'kill-mover': {
      const { master: from } = await pairHosts(fleet, fault.pair);
      const to = await pairHosts(fleet, fault.pair === 1 ? 2 : 1);
      const shards = [...(await fleet.shardsOf(from))];
      if (shards.length === 0) {
        log(`kill-mover: pair ${fault.pair} holds no shard; nothing to move`);
        return { failedOver: false };
      }
      const span = `${shards[Math.floor(fault.ms) % shards.length]!}..${shards[Math.floor(fault.ms) % shards.length]!}`;
      const mover = spawn(process.execPath, [CLI, 'shards', 'move', span, '--to', to.master, '--to-slave', to.slave, '--dir', fleet.dir, '--hold-ms', '2000'], { cwd: ROOT, stdio: 'ignore', env: { ...process.env, NODE_OPTIONS: '' } });
      const ended = new Promise<void>((r) => mover.once('exit', () => r()));
      // Killed somewhere in the move (copy, lag gate, freeze, switch or after), by the seed.
      await Promise.race([ended, sleep(300 + (fault.ms % 2700))]);
      mover.kill('SIGKILL');
      await ended;
      // What the dead mover recorded is finished (or rolled back) by --resume; nothing recorded: nothing to do.
      const resumed = await cliProcess(['shards', 'move', span, '--resume', '--dir', fleet.dir]);
      if (resumed.code !== 0 && !/UNKNOWN_MOVE|aborted, the shards are back on/.test(resumed.stderr)) {
        const aborted = await cliProcess(['shards', 'move', span, '--abort', '--dir', fleet.dir]);
        if (aborted.code !== 0) throw new Error(`after kill -9 of the mover of ${span}: --resume exited ${resumed.code} (${resumed.stderr.trim()}), --abort ${aborted.code} (${aborted.stderr.trim()})`);
        log(`kill-mover: --resume failed (${resumed.stderr.trim()}); --abort rolled it back`);
      }
      if (resumed.code === 0) await run(['shards', 'drop-moved', '--dir', fleet.dir]);
      log(`kill-mover ${span}: ${resumed.code === 0 ? 'resumed to the end' : resumed.stderr.trim().split('\n').at(-1)}`);
      return { failedOver: false };
    }
    case 'move': {
      const { master: from } = await pairHosts(fleet, fault.pair);
      const other = fault.pair === 1 ? 2 : 1;
      const to = await pairHosts(fleet, other);
      const shards = [...(await fleet.shardsOf(from))];
      if (shards.length === 0) {
        log(`move: pair ${fault.pair} holds no shard; nothing to move`);
        return { failedOver: false };
      }
      const s = shards[Math.floor(fault.ms) % shards.length]!;
      const moved = await cliProcess(['shards', 'move', `${s}..${s}`, '--to', to.master, '--to-slave', to.slave, '--dir', fleet.dir, '--hold-ms', '2000']);
      // A move that gives up and rolls itself back (a target slave too far behind on a busy
      // machine) did its job: the shard serves from its source again. Anything else fails the run.
      if (moved.code !== 0 && !/aborted, the shards are back on/.test(moved.stderr)) throw new Error(`shards move ${s}..${s} exited ${moved.code}: ${moved.stderr.trim()}`);
      if (moved.code !== 0) log(`move rolled back: ${moved.stderr.trim()}`);
      else await run(['shards', 'drop-moved', '--dir', fleet.dir]);
      return { failedOver: false, ...(moved.code !== 0 ? { aborted: true } : {}) };
    }
  }
}

export async function runChaos(options: { engine?: ChaosEngineName; seed: number; faults: Fault[]; pairs: number; shards: number; witness?: boolean; log?: (m: string) => void }): Promise<ChaosSummary> {
  const log = options.log ?? (() => undefined);
  const started = Date.now();
  const fleet = await ChaosFleet.start({ ...(options.engine !== undefined ? { engine: options.engine } : {}), pairs: options.pairs, shards: options.shards, services: 2, writersPerService: 2, ...(options.witness !== undefined ? { witness: options.witness } : {}), log });
  const outcomes: FaultOutcome[] = [];
  let falseFailovers: number;
  try {
    await fleet.ackedAfter(Date.now() - 1, new Set(Array.from({ length: options.shards }, (_, i) => i)));
    for (const fault of options.faults) {
      log(`fault: ${JSON.stringify(fault)}`);
      const done = await apply(fleet, fault, log);
      const convergeMs = await repair(fleet, log);
      outcomes.push({
        kind: fault.kind, pair: fault.pair, ms: fault.ms, failedOver: done.failedOver, convergeMs,
        ...(done.writesBackMs !== undefined ? { writesBackMs: done.writesBackMs } : {}), ...(done.rebuiltByHeal !== undefined ? { rebuiltByHeal: done.rebuiltByHeal } : {}),
        ...(done.aborted ? { aborted: true } : {}),
      });
      log(`  -> ${JSON.stringify(outcomes.at(-1))}`);
    }
    // A failover is due only for a master killed or stopped, decided while that fault lasted.
    const failovers = fleet.allDecisions().filter((d) => d.verdict === 'failover');
    falseFailovers = failovers.filter((d) => !fleet.hits.some((h) => h.master === d.master && d.receivedAt >= h.from && d.receivedAt <= h.to)).length;
    for (const d of fleet.allDecisions()) log(`heal ${d.verdict} ${d.master}${d.reason !== undefined ? `: ${d.reason}` : ''}${d.error !== undefined ? ` (error: ${d.error})` : ''}`);
    // Writes flow again everywhere before they stop.
    await fleet.ackedAfter(Date.now(), new Set(Array.from({ length: options.shards }, (_, i) => i)));
    await fleet.stopWriters();
    // Verify compares once every slave applied the last writes (an outcome, not a time: seed
    // 1033's slave, back after 44 s under load, was still applying when verify ran).
    const catchUpMs = await fleet.slavesCaughtUp(CONVERGE_BOUND_MS);
    log(`slaves caught up in ${catchUpMs} ms`);
    const lost = await readBack(fleet);
    const verify = await cliProcess(['shards', 'verify', `0..${options.shards - 1}`, '--dir', fleet.dir, '--json']);
    if (verify.code !== 0) log(`shards verify: ${verify.stdout}${verify.stderr}`);
    return {
      seed: options.seed, outcomes, acked: fleet.acked.length, lost, doubleWriters: fleet.doubleWriters, falseFailovers,
      verifyClean: verify.code === 0, errors: Object.fromEntries(fleet.errors), durationMs: Date.now() - started,
    };
  } finally {
    await fleet.stop();
  }
}

/** Every acknowledged write, read back through a fresh kit on the real config: the ids that are gone. */
async function readBack(fleet: ChaosFleet): Promise<string[]> {
  const kit = await ShardKit.open({ configPath: fleet.cluster().configPath, dataDir: fleet.dir });
  const lost: string[] = [];
  try {
    for (const a of fleet.acked) {
      try {
        await kit.objects.get(BigInt(a.id));
      } catch (err) {
        if ((err as { code?: string }).code === 'NOT_FOUND') lost.push(a.id);
        else throw err;
      }
    }
  } finally {
    await kit.close();
  }
  return lost;
}
