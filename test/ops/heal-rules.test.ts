import { test } from 'node:test';
import assert from 'node:assert/strict';
import { judge, remember, type HealSettings, type PairObservation } from '../../src/ops/heal/heal-rules.js';
import { HealSupervisor, type HealDecision, type HealWitness } from '../../src/ops/heal/heal-supervisor.js';
import { MemoryTopologyStore } from '../../src/topology/memory/memory-topology-store.js';
import { ShardMap, defaultShardMapJson } from '../../src/topology/shard-map.js';
import type { FailoverResult } from '../../src/ops/failover/emergency-failover.js';

const SETTINGS: HealSettings = { deadAfterProbes: 3, maxLagSeconds: 10, flapWindowMs: 60_000, mode: 'act', rebuild: false, spares: [] };
const dead: PairObservation = { master: 'A', slave: 'B', masterReachable: false, masterError: 'ECONNREFUSED', slaveReachable: true, slaveIoConnected: false, slaveSqlHealthy: true, slaveLagSeconds: null };

test('a master is dead only after N failed probes and when its slave lost it too', () => {
  assert.equal(judge({ ...dead, masterReachable: true }, { failedProbes: 0 }, SETTINGS, 0).kind, 'healthy');
  assert.equal(judge(dead, { failedProbes: 2 }, SETTINGS, 0).kind, 'suspect');
  assert.equal(judge(dead, { failedProbes: 3 }, SETTINGS, 0).kind, 'failover');
  // The supervisor cannot reach the master but the slave still can: a partition, not a death.
  const partitioned = judge({ ...dead, slaveIoConnected: true }, { failedProbes: 9 }, SETTINGS, 0);
  assert.equal(partitioned.kind, 'suspect');
  // Nothing reachable at all: the supervisor is the one cut off.
  assert.equal(judge({ ...dead, slaveReachable: false }, { failedProbes: 9 }, SETTINGS, 0).kind, 'refuse');
});

test('a stopped SQL thread is not a dead master, and a broken or lagging slave is never promoted', () => {
  // Only the slave's SQL thread stopped (ProxySQL/orchestrator#106): the master answers.
  assert.equal(judge({ ...dead, masterReachable: true, slaveIoConnected: true, slaveSqlHealthy: false }, { failedProbes: 0 }, SETTINGS, 0).kind, 'healthy');
  const broken = judge({ ...dead, slaveSqlHealthy: false, slaveError: 'Duplicate entry' }, { failedProbes: 3 }, SETTINGS, 0);
  assert.equal(broken.kind, 'refuse');
  assert.match((broken as { reason: string }).reason, /Duplicate entry/);
  assert.equal(judge({ ...dead, slaveLagSeconds: 11 }, { failedProbes: 3 }, SETTINGS, 0).kind, 'refuse');
  assert.equal(judge({ ...dead, slaveLagSeconds: 10 }, { failedProbes: 3 }, SETTINGS, 0).kind, 'failover');
});

test('anti-flapping: no second failover of the pair within the window; observe mode recommends the command', () => {
  assert.equal(judge(dead, { failedProbes: 3, lastFailoverAt: 1_000 }, SETTINGS, 30_000).kind, 'refuse');
  assert.equal(judge(dead, { failedProbes: 3, lastFailoverAt: 1_000 }, SETTINGS, 62_000).kind, 'failover');
  const observe = judge(dead, { failedProbes: 3 }, { ...SETTINGS, mode: 'observe' }, 0);
  assert.deepEqual(observe.kind === 'recommend' && observe.command, 'shardkit failover A --emergency');
  assert.equal(remember({ failedProbes: 2 }, dead).failedProbes, 3);
  assert.equal(remember({ failedProbes: 2 }, { ...dead, masterReachable: true }).failedProbes, 0);
});

test('the supervisor fails over once per confirmed death, reports changes only, and stays put within the flap window', async () => {
  const map = ShardMap.fromJSON(defaultShardMapJson({ shards: 8, pairs: 2, modShards: 8 }));
  let current = map;
  const down = new Set<string>();
  const failedOver: string[] = [];
  const decisions: HealDecision[] = [];
  let now = 0;
  const sup = new HealSupervisor({
    map: async () => current,
    observe: async (master, slave) => (down.has(master) ? { ...dead, master, slave } : { master, slave, masterReachable: true, slaveReachable: true, slaveIoConnected: true, slaveSqlHealthy: true, slaveLagSeconds: 0 }),
    failover: async (master) => {
      failedOver.push(master);
      // The map names the slave master, without a slave until it is rebuilt.
      const json = current.toJSON();
      for (const r of [...json.ranges, ...json.modShards.ranges]) if (r.master === master) {
        r.master = r.slave!;
        delete r.slave;
      }
      current = ShardMap.fromJSON({ ...json, version: json.version + 1 });
      return { kind: 'emergency', oldMaster: master, newMaster: 'x', position: '', mapVersion: 2, oldMasterFenced: false, oldMasterIsSlave: false, writePauseMs: 0 } satisfies FailoverResult;
    },
  }, SETTINGS, (d) => decisions.push(d), () => now);
  assert.deepEqual(await sup.round(), [], 'healthy pairs are not reported');
  down.add('MySQL001A');
  for (let i = 0; i < 5; i++) {
    now += 1000;
    await sup.round();
  }
  assert.deepEqual(failedOver, ['MySQL001A']);
  // One suspect line for the run of missed probes ("1 of 3", "2 of 3" are one cause), then the failover.
  assert.deepEqual(decisions.map((d) => d.verdict), ['suspect', 'failover']);
  assert.equal(sup.failovers, 1);
});

test('a failover that is refused is not a failover: no flap window, tried again with backoff, reported once per error, and done once the cause is gone', async () => {
  let current = ShardMap.fromJSON(defaultShardMapJson({ shards: 8, pairs: 2, modShards: 8 }));
  let refusal: string | undefined = 'host MySQL001A masters shards 0..3 overlap 0..1, which move m1 holds (phase copied)';
  const tried: number[] = [];
  const decisions: HealDecision[] = [];
  let now = 0;
  const sup = new HealSupervisor({
    map: async () => current,
    observe: async (master, slave) => (master === 'MySQL001A' ? { ...dead, master, slave } : { master, slave, masterReachable: true, slaveReachable: true, slaveIoConnected: true, slaveSqlHealthy: true, slaveLagSeconds: 0 }),
    failover: async (master) => {
      tried.push(now);
      if (refusal !== undefined) throw new Error(refusal);
      const json = current.toJSON();
      for (const r of [...json.ranges, ...json.modShards.ranges]) if (r.master === master) {
        r.master = r.slave!;
        delete r.slave;
      }
      current = ShardMap.fromJSON({ ...json, version: json.version + 1 });
      return { kind: 'emergency', oldMaster: master, newMaster: 'MySQL001B', position: '', mapVersion: 2, oldMasterFenced: false, oldMasterIsSlave: false, writePauseMs: 0 } satisfies FailoverResult;
    },
  }, SETTINGS, (d) => decisions.push(d), () => now);
  // 2 s probes for a minute: the failover is tried at the third probe, then after 1, 2, 4, 8, 16, 32 s.
  for (let i = 0; i < 30; i++) {
    now += 2000;
    await sup.round();
  }
  assert.equal(sup.failovers, 0);
  assert.ok(tried.length >= 5 && tried.length <= 8, `tried ${tried.length} times in a minute: ${tried.join(' ')}`);
  for (let i = 2; i < tried.length; i++) assert.ok(tried[i]! - tried[i - 1]! >= tried[i - 1]! - tried[i - 2]!, `backing off: ${tried.join(' ')}`);
  // One suspect line, then one line for the refusal however many times it is tried.
  assert.deepEqual(decisions.map((d) => d.verdict), ['suspect', 'failover']);
  assert.match(decisions[1]!.error ?? '', /which move m1 holds/);
  // Another error is another line.
  refusal = 'the topology store is unavailable';
  for (let i = 0; i < 40 && decisions.length < 3; i++) {
    now += 2000;
    await sup.round();
  }
  assert.equal(decisions.length, 3);
  assert.match(decisions[2]!.error ?? '', /topology store/);
  // The cause is gone (the move was aborted): the next try fails over, although a try "happened" seconds ago.
  refusal = undefined;
  for (let i = 0; i < 40 && sup.failovers === 0; i++) {
    now += 2000;
    await sup.round();
  }
  assert.equal(sup.failovers, 1);
  assert.equal(decisions.at(-1)!.verdict, 'failover');
  assert.equal(decisions.at(-1)!.error, undefined);
});

test('a master that answers again forgets its failed failover; the next death is judged afresh', () => {
  const memory = { failedProbes: 5, suspectSince: 1, failoverFailed: { attempts: 3, error: 'refused', retryAt: 10_000 } };
  const back = remember(memory, { ...dead, masterReachable: true }, 2_000);
  assert.equal(back.failoverFailed, undefined);
  assert.equal(judge(dead, { ...memory, failedProbes: 3 }, SETTINGS, 5_000).kind, 'refuse');
  assert.equal(judge(dead, { ...back, failedProbes: 3 }, SETTINGS, 5_000).kind, 'failover');
});

test('--rebuild: after a failover the pair gets a slave by itself, the first spare the map does not name (else the old master); a failed rebuild is reported', async () => {
  const json = defaultShardMapJson({ shards: 8, pairs: 2, modShards: 8 });
  let current = ShardMap.fromJSON(json);
  const down = new Set<string>(['MySQL001A']);
  const rebuilds: Array<[string, string | undefined]> = [];
  const decisions: HealDecision[] = [];
  let failRebuild = false;
  const target = {
    map: async () => current,
    observe: async (master: string, slave: string) => (down.has(master) ? { ...dead, master, slave } : { master, slave, masterReachable: true, slaveReachable: true, slaveIoConnected: true, slaveSqlHealthy: true, slaveLagSeconds: 0 }),
    failover: async (master: string) => {
      const j = current.toJSON();
      let newMaster = '';
      for (const r of [...j.ranges, ...j.modShards.ranges]) if (r.master === master) {
        newMaster = r.slave!;
        r.master = r.slave!;
        r.slave = master;
      }
      current = ShardMap.fromJSON({ ...j, version: j.version + 1 });
      return { kind: 'emergency', oldMaster: master, newMaster, position: '', mapVersion: 2, oldMasterFenced: false, oldMasterIsSlave: false, writePauseMs: 0 } satisfies FailoverResult;
    },
    rebuild: async (master: string, slave?: string) => {
      rebuilds.push([master, slave]);
      if (failRebuild) throw new Error('no route to host');
      return { master, slave };
    },
  };
  // MySQL002B is named by the map (pair 2's slave): never a spare. MySQL009A is free.
  const sup = new HealSupervisor(target, { ...SETTINGS, rebuild: true, spares: ['MySQL002B', 'MySQL009A'] }, (d) => decisions.push(d));
  for (let i = 0; i < 4; i++) await sup.round();
  await sup.settle();
  assert.deepEqual(rebuilds, [['MySQL001B', 'MySQL009A']]);
  const r = decisions.find((d) => d.verdict === 'rebuild')!;
  assert.equal(r.master, 'MySQL001B');
  assert.equal(r.slave, 'MySQL009A');
  assert.equal(r.error, undefined);

  // No spare left: the old master (the map's slave) is rebuilt; a failure is a reported decision.
  current = ShardMap.fromJSON(json);
  failRebuild = true;
  const again = new HealSupervisor(target, { ...SETTINGS, rebuild: true, spares: [] }, (d) => decisions.push(d));
  for (let i = 0; i < 4; i++) await again.round();
  await again.settle();
  assert.deepEqual(rebuilds.at(-1), ['MySQL001B', undefined]);
  const failed = decisions.filter((d) => d.verdict === 'rebuild').at(-1)!;
  assert.equal(failed.slave, 'MySQL001A');
  assert.match(failed.error ?? '', /no route to host/);

  // Without --rebuild nothing is rebuilt.
  current = ShardMap.fromJSON(json);
  const before = rebuilds.length;
  const off = new HealSupervisor(target, SETTINGS, () => {});
  for (let i = 0; i < 4; i++) await off.round();
  await off.settle();
  assert.equal(rebuilds.length, before);
});

test('a supervisor without the lease observes (recommends only); elected, it acts; it stops acting the moment it loses it', async () => {
  let current = ShardMap.fromJSON(defaultShardMapJson({ shards: 8, pairs: 1, modShards: 8 }));
  const failedOver: string[] = [];
  const decisions: HealDecision[] = [];
  const sup = new HealSupervisor({
    map: async () => current,
    observe: async (master, slave) => ({ ...dead, master, slave }),
    failover: async (master) => {
      failedOver.push(master);
      return { kind: 'emergency', oldMaster: master, newMaster: 'MySQL001B', position: '', mapVersion: 2, oldMasterFenced: false, oldMasterIsSlave: false, writePauseMs: 0 } satisfies FailoverResult;
    },
  }, { ...SETTINGS, flapWindowMs: 0 }, (d) => decisions.push(d));
  sup.setMode('observe');
  for (let i = 0; i < 4; i++) await sup.round();
  assert.deepEqual(failedOver, []);
  assert.equal(decisions.at(-1)!.verdict, 'recommend');
  sup.setMode('act');
  await sup.round();
  // Both pairs of the map (objects and mod shards) are dead in this fake fleet.
  assert.deepEqual(failedOver.sort(), ['MySQL001A', 'msdb001a']);
  sup.setMode('observe');
  for (let i = 0; i < 4; i++) await sup.round();
  assert.equal(failedOver.length, 2, 'no action after the lease is lost');
  current = ShardMap.fromJSON(current.toJSON());
});

test('act mode: the moves of a dead master\'s shards are marked aborting before its failover, and the decision names them', async () => {
  const current = ShardMap.fromJSON(defaultShardMapJson({ shards: 8, pairs: 2, modShards: 8 }));
  const calls: string[] = [];
  const decisions: HealDecision[] = [];
  const sup = new HealSupervisor({
    map: async () => current,
    observe: async (master, slave) => (master === 'MySQL001A' ? { ...dead, master, slave } : { master, slave, masterReachable: true, slaveReachable: true, slaveIoConnected: true, slaveSqlHealthy: true, slaveLagSeconds: 0 }),
    abortMoves: async (master, reason) => {
      calls.push(`abort ${master}: ${reason.split(':')[0]}`);
      return ['move-0-1-x'];
    },
    failover: async (master) => {
      calls.push(`failover ${master}`);
      return { kind: 'emergency', oldMaster: master, newMaster: 'MySQL001B', position: '', mapVersion: 2, oldMasterFenced: false, oldMasterIsSlave: false, writePauseMs: 0 } satisfies FailoverResult;
    },
  }, SETTINGS, (d) => decisions.push(d));
  for (let i = 0; i < 3; i++) await sup.round();
  assert.deepEqual(calls, ['abort MySQL001A: MySQL001A died (MySQL001A unreachable for 3 probes and its slave MySQL001B lost it too)', 'failover MySQL001A']);
  assert.deepEqual(decisions.at(-1)!.abortedMoves, ['move-0-1-x']);
});

test('a slave that is down while its master answers is degraded after --dead-after probes; a backup\'s stopped applier is not', () => {
  const up: PairObservation = { master: 'A', slave: 'B', masterReachable: true, slaveReachable: true, slaveIoConnected: true, slaveSqlHealthy: true, slaveLagSeconds: 0 };
  const gone: PairObservation = { ...up, slaveReachable: false, slaveIoConnected: undefined, slaveSqlHealthy: undefined, slaveError: 'ECONNREFUSED' };
  let memory = { failedProbes: 0 };
  const verdicts: string[] = [];
  for (let i = 0; i < 4; i++) {
    memory = remember(memory, gone, i);
    verdicts.push(judge(gone, memory, SETTINGS, i).kind);
  }
  assert.deepEqual(verdicts, ['healthy', 'healthy', 'degraded', 'degraded']);
  const degraded = judge(gone, memory, SETTINGS, 5);
  assert.equal(degraded.kind === 'degraded' && degraded.cause, 'slave-unreachable');
  assert.match((degraded as { reason: string }).reason, /its slave B does not answer \(ECONNREFUSED\)/);
  // Back: the count starts again.
  memory = remember(memory, up, 6);
  assert.equal(judge(up, memory, SETTINGS, 6).kind, 'healthy');
  // A backup stops the slave's SQL thread (no error): healthy however long it lasts.
  const copying: PairObservation = { ...up, slaveSqlHealthy: false, slaveError: '' };
  for (let i = 0; i < 5; i++) memory = remember(memory, copying, 7 + i);
  assert.equal(judge(copying, memory, SETTINGS, 12).kind, 'healthy');
  // An applier error or a lost IO thread is degraded.
  const broken: PairObservation = { ...up, slaveSqlHealthy: false, slaveError: 'Duplicate entry' };
  for (let i = 0; i < 3; i++) memory = remember(memory, broken, 13 + i);
  assert.equal((judge(broken, memory, SETTINGS, 16) as { cause: string }).cause, 'slave-broken');
});

test('the supervisor reports a dead slave once (and its return), and in act mode with --rebuild and --spares gives the pair a slave on a spare', async () => {
  const current = ShardMap.fromJSON(defaultShardMapJson({ shards: 8, pairs: 2, modShards: 8 }));
  let slaveDead = true;
  const rebuilds: Array<[string, string | undefined]> = [];
  const decisions: HealDecision[] = [];
  const target = {
    map: async () => current,
    observe: async (master: string, slave: string) => (master === 'MySQL001A' && slaveDead
      ? { master, slave, masterReachable: true, slaveReachable: false, slaveError: 'connect ECONNREFUSED' }
      : { master, slave, masterReachable: true, slaveReachable: true, slaveIoConnected: true, slaveSqlHealthy: true, slaveLagSeconds: 0 }),
    failover: async (): Promise<FailoverResult> => { throw new Error('no failover expected'); },
    rebuild: async (master: string, slave?: string) => {
      rebuilds.push([master, slave]);
      return { master, slave };
    },
  };
  const observing = new HealSupervisor(target, { ...SETTINGS, mode: 'observe' }, (d) => decisions.push(d));
  for (let i = 0; i < 8; i++) await observing.round();
  assert.deepEqual(decisions.map((d) => `${d.master} ${d.verdict}`), ['MySQL001A degraded']);
  slaveDead = false;
  await observing.round();
  assert.deepEqual(decisions.map((d) => `${d.master} ${d.verdict}`), ['MySQL001A degraded', 'MySQL001A healthy']);
  assert.deepEqual(rebuilds, [], 'observe mode rebuilds nothing');

  slaveDead = true;
  const acting = new HealSupervisor(target, { ...SETTINGS, rebuild: true, spares: ['MySQL001B', 'MySQL009A'] }, (d) => decisions.push(d));
  for (let i = 0; i < 8; i++) await acting.round();
  await acting.settle();
  assert.deepEqual(rebuilds, [['MySQL001A', 'MySQL009A']], 'one rebuild, onto the spare the map does not name');
  // No spare free: nothing is rebuilt onto the dead slave.
  const noSpare = new HealSupervisor(target, { ...SETTINGS, rebuild: true, spares: ['MySQL002B'] }, () => {});
  for (let i = 0; i < 5; i++) await noSpare.round();
  await noSpare.settle();
  assert.equal(rebuilds.length, 1);
});

/** A supervisor's witness over `store`'s heal records, as `shardkit heal` has it (publish and history), under id `id`. */
function recordingWitness(store: MemoryTopologyStore, id: string, now: () => number): HealWitness {
  return {
    ask: false, waitMs: 0,
    services: async () => new Map(),
    history: () => store.heal.readAll(),
    publish: (s) => store.heal.put(id, { ...s, acting: true, at: now(), ttlMs: 10_000, hostname: 'test', pid: 1 }),
  };
}

test('a restarted supervisor keeps the flap window: the failovers published by the one before count, and are published on', async () => {
  // Before: the window lived in the process only; a supervisor restarted (systemd, a lease handed
  // over) failed the same pair over again minutes later (the chaos review: 4 min 40 s after).
  const store = new MemoryTopologyStore();
  let current = ShardMap.fromJSON(defaultShardMapJson({ shards: 8, pairs: 2, modShards: 8 }));
  const down = new Set<string>();
  const failedOver: string[] = [];
  let now = 1_000_000;
  const target = {
    map: async () => current,
    observe: async (master: string, slave: string): Promise<PairObservation> => (down.has(master) ? { ...dead, master, slave } : { master, slave, masterReachable: true, slaveReachable: true, slaveIoConnected: true, slaveSqlHealthy: true, slaveLagSeconds: 0 }),
    failover: async (master: string) => {
      failedOver.push(master);
      // The slave becomes master and the old master its slave (as after a rebuild).
      const json = current.toJSON();
      for (const r of [...json.ranges, ...json.modShards.ranges]) if (r.master === master) [r.master, r.slave] = [r.slave!, master];
      current = ShardMap.fromJSON({ ...json, version: json.version + 1 });
      return { kind: 'emergency', oldMaster: master, newMaster: 'x', position: '', mapVersion: 2, oldMasterFenced: false, oldMasterIsSlave: false, writePauseMs: 0 } satisfies FailoverResult;
    },
  };
  const witness = (id: string) => recordingWitness(store, id, () => now);
  const first = new HealSupervisor(target, SETTINGS, () => {}, () => now, () => {}, witness('heal-1'));
  down.add('MySQL001A');
  for (let i = 0; i < 5; i++) {
    now += 1000;
    await first.round();
  }
  assert.deepEqual(failedOver, ['MySQL001A']);
  down.delete('MySQL001A');

  // The first supervisor dies; its record runs out. A new one starts 20 s later, and the pair's new master dies.
  now += 20_000;
  const decisions: HealDecision[] = [];
  const second = new HealSupervisor(target, SETTINGS, (d) => decisions.push(d), () => now, () => {}, witness('heal-2'));
  down.add('MySQL001B');
  for (let i = 0; i < 5; i++) {
    now += 1000;
    await second.round();
  }
  assert.deepEqual(failedOver, ['MySQL001A'], 'no second failover of the pair within the window');
  assert.match(decisions.at(-1)!.reason ?? '', /failed over \d+ s ago \(anti-flapping window 60 s\)/);
  // The second publishes the failover on, so a third supervisor would recall it too.
  const published = (await store.heal.readAll()).get('heal-2')!;
  assert.ok(published.pairs.some((p) => p.master === 'MySQL001A' && p.verdict === 'failover'), JSON.stringify(published.pairs));

  // Past the window, the same death is failed over.
  now += SETTINGS.flapWindowMs;
  for (let i = 0; i < 5; i++) {
    now += 1000;
    await second.round();
  }
  assert.deepEqual(failedOver, ['MySQL001A', 'MySQL001B']);
  await store.close();
});

test('a failover that failed is published as refused: a supervisor started after it does not take it for one that happened', async () => {
  const store = new MemoryTopologyStore();
  const current = ShardMap.fromJSON(defaultShardMapJson({ shards: 8, pairs: 2, modShards: 8 }));
  const tried: string[] = [];
  let failing = true;
  let now = 1_000_000;
  const target = {
    map: async () => current,
    observe: async (master: string, slave: string): Promise<PairObservation> => (master === 'MySQL001A' ? { ...dead, master, slave } : { master, slave, masterReachable: true, slaveReachable: true, slaveIoConnected: true, slaveSqlHealthy: true, slaveLagSeconds: 0 }),
    failover: async (master: string) => {
      tried.push(master);
      if (failing) throw new Error('the store is down');
      return { kind: 'emergency', oldMaster: master, newMaster: 'x', position: '', mapVersion: 2, oldMasterFenced: false, oldMasterIsSlave: false, writePauseMs: 0 } satisfies FailoverResult;
    },
  };
  const witness = (id: string) => recordingWitness(store, id, () => now);
  const first = new HealSupervisor(target, SETTINGS, () => {}, () => now, () => {}, witness('heal-1'));
  // Three missed probes: the failover is tried once, and fails.
  for (let i = 0; i < 3; i++) {
    now += 1000;
    await first.round();
  }
  assert.deepEqual(tried, ['MySQL001A']);
  assert.equal((await store.heal.readAll()).get('heal-1')!.pairs.find((p) => p.master === 'MySQL001A')!.verdict, 'refuse');
  failing = false;
  const second = new HealSupervisor(target, SETTINGS, () => {}, () => now, () => {}, witness('heal-2'));
  for (let i = 0; i < 4; i++) {
    now += 1000;
    await second.round();
  }
  assert.deepEqual(tried, ['MySQL001A', 'MySQL001A'], 'the dead master is failed over, not refused as flapping');
  assert.equal(second.failovers, 1);
  await store.close();
});
