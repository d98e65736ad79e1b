/**
 * The services as the heal supervisor's third witness (#31): a master the supervisor and the
 * slave both lost is not failed over while a running service still reaches it (the supervisor
 * and the slave may be the ones cut off); once the services cannot reach it either, or do not
 * answer within the wait, it is. Server-free: real ShardKit services, their real heartbeats and
 * probes through their backend, the real supervisor and a memory topology store; only the
 * pair's probes and the backend's reach are the test's.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { judge, remember, type HealSettings, type PairObservation } from '../../src/ops/heal/heal-rules.js';
import { HealSupervisor, witnessOf, type HealDecision, type HealWitness } from '../../src/ops/heal/heal-supervisor.js';
import { ShardKit } from '../../src/kit/shard-kit.js';
import { SqliteBackend } from '../../src/storage/sqlite/sqlite-backend.js';
import { MemoryTopologyBacking, MemoryTopologyStore } from '../../src/topology/memory/memory-topology-store.js';
import { ShardMap } from '../../src/topology/shard-map.js';
import type { ServiceHeartbeat } from '../../src/topology/service-records.js';
import type { FailoverResult } from '../../src/ops/failover/emergency-failover.js';
import { testConfig, testSchema } from '../kit/kit-fixture.js';

const SETTINGS: HealSettings = { deadAfterProbes: 2, maxLagSeconds: 10, flapWindowMs: 60_000, mode: 'act', rebuild: false, spares: [] };
const dead: PairObservation = { master: 'MySQL001A', slave: 'MySQL001B', masterReachable: false, masterError: 'ETIMEDOUT', slaveReachable: true, slaveIoConnected: false, slaveSqlHealthy: true, slaveLagSeconds: null };

test('rules: a service that reaches the master keeps it; silence is waited for up to the wait, then the failover goes on', () => {
  const memory = { failedProbes: 2, suspectSince: 1_000 };
  const w = { services: 2, answered: 2, reaching: ['web-1'], waitedMs: 3_000, waitMs: 5_000 };
  const kept = judge({ ...dead, witness: w }, memory, SETTINGS, 4_000);
  assert.equal(kept.kind, 'suspect');
  assert.match((kept as { reason: string }).reason, /1 of 2 live service\(s\) still reach it \(web-1\)/);
  // Past the wait the word of a service that reaches it still counts: a reachable master is never failed over.
  assert.equal(judge({ ...dead, witness: { ...w, waitedMs: 60_000 } }, memory, SETTINGS, 61_000).kind, 'suspect');
  const waiting = judge({ ...dead, witness: { ...w, answered: 1, reaching: [] } }, memory, SETTINGS, 4_000);
  assert.equal(waiting.kind, 'suspect');
  assert.match((waiting as { reason: string }).reason, /waiting for the services' word \(1 of 2 answered/);
  const silent = judge({ ...dead, witness: { ...w, answered: 1, reaching: [], waitedMs: 5_000 } }, memory, SETTINGS, 6_000);
  assert.equal(silent.kind, 'failover');
  assert.match((silent as { reason: string }).reason, /1 of 2 live service\(s\) answered within 5000 ms, none reached it/);
  const all = judge({ ...dead, witness: { ...w, reaching: [] } }, memory, SETTINGS, 4_000);
  assert.match((all as { reason: string }).reason, /as did every live service \(2\)/);
  // No live service at all: nothing to wait for.
  assert.equal(judge({ ...dead, witness: { ...w, services: 0, answered: 0, reaching: [] } }, memory, SETTINGS, 4_000).kind, 'failover');
  // The suspicion starts at the first missed probe and ends when the master answers.
  assert.equal(remember({ failedProbes: 0 }, dead, 7).suspectSince, 7);
  assert.equal(remember({ failedProbes: 1, suspectSince: 7 }, dead, 9).suspectSince, 7);
  assert.equal(remember({ failedProbes: 1, suspectSince: 7 }, { ...dead, masterReachable: true }, 9).suspectSince, undefined);
});

test('witnessOf: only live services count, and only a word given in answer to this suspicion, whatever the clocks say', () => {
  const beat = (at: number, reach?: ServiceHeartbeat['reach']): ServiceHeartbeat => ({ at, ttlMs: 1_000, mapVersion: 1, missing: [], hostname: 'h', pid: 1, ...(reach ? { reach } : {}) });
  const services = new Map([
    ['gone', beat(0, [{ host: 'M', ok: true, at: 0, answering: [5_000] }])],
    // An answer to an earlier suspicion (the master came back, then was missed again at 5,000).
    ['stale-word', beat(9_800, [{ host: 'M', ok: true, at: 9_700, answering: [4_000] }])],
    ['reaches', beat(9_800, [{ host: 'M', ok: true, at: 9_700, answering: [5_000] }])],
    ['lost-it', beat(9_800, [{ host: 'M', ok: false, at: 9_700, answering: [6_000, 5_000], error: 'ETIMEDOUT' }])],
    ['other-host', beat(9_800, [{ host: 'X', ok: true, at: 9_700, answering: [5_000] }])],
    // Its clock runs 10 minutes ahead: the probe's own time says nothing.
    ['clock-ahead', beat(9_800, [{ host: 'M', ok: true, at: 609_700, answering: [4_000] }])],
    // Its clock runs 10 minutes behind, but it answered this very suspicion.
    ['clock-behind', beat(9_800, [{ host: 'M', ok: false, at: 1, answering: [5_000] }])],
    // A service of the release before the echo: its probe time is all it says, and it counts.
    ['old-release', beat(9_800, [{ host: 'M', ok: true, at: 9_700 }])],
  ]);
  assert.deepEqual(witnessOf(services, 'M', 5_000, 10_000, 3_000), { services: 7, answered: 4, reaching: ['reaches', 'old-release'], waitedMs: 5_000, waitMs: 3_000 });
});

/** A SQLite backend that, like the server ones, has a pool per declared host; whether a host answers a ping is the test's. */
class ReachBackend extends SqliteBackend {
  readonly reachable = new Set(['MySQL001A', 'MySQL001B', 'MySQL002A', 'MySQL002B']);

  knowsHost(): boolean {
    return true;
  }

  learnHosts(): string[] {
    return [];
  }

  async ping(host: string): Promise<void> {
    if (!this.reachable.has(host)) throw new Error(`connect ETIMEDOUT (${host})`);
  }
}

test('end to end: the services reach the master the supervisor lost, so no failover; once they lose it too, the supervisor fails it over', async () => {
  const root = mkdtempSync(join(tmpdir(), 'shardkit-heal-witness-'));
  const backing = new MemoryTopologyBacking(ShardMap.fromJSON(testConfig.shardMap));
  const store = new MemoryTopologyStore({ backing });
  const backends = [0, 1].map(() => new ReachBackend({ root, schema: testSchema, maxOpenShards: 16 }));
  // Beats only when asked (and on map changes): the test decides the order of words and rounds
  // (real clocks: a word counts when given after the suspicion began, and the wait is long).
  const kits = backends.map((backend, i) => new ShardKit({ backend, schema: testSchema, topology: new MemoryTopologyStore({ backing }), heartbeat: { id: `web-${i}`, intervalMs: 600_000 } }));
  const failovers: string[] = [];
  const decisions: HealDecision[] = [];
  const witness: HealWitness = {
    ask: true, waitMs: 60_000,
    services: () => store.services.readAll(),
    publish: (s) => store.heal.put('heal-test', { ...s, acting: true, at: Date.now(), ttlMs: 600_000, hostname: 'test', pid: 1 }),
  };
  const supervisor = new HealSupervisor({
    map: async () => (await store.read())!,
    // The supervisor lost MySQL001A, and so did its slave; every other pair is fine.
    observe: async (master, slave) => (master === 'MySQL001A' ? { ...dead } : { master, slave, masterReachable: true, slaveReachable: true, slaveIoConnected: true, slaveSqlHealthy: true, slaveLagSeconds: 0 }),
    failover: async (master): Promise<FailoverResult> => {
      failovers.push(master);
      return { oldMaster: master, newMaster: 'MySQL001B' } as unknown as FailoverResult;
    },
  }, SETTINGS, (d) => decisions.push(d), Date.now, () => {}, witness);
  const beatAll = async () => {
    for (const k of kits) await k.heartbeat!.beat();
  };
  try {
    for (const k of kits) await k.ready();
    // Round 1: a missed probe; the supervisor publishes MySQL001A as a suspect.
    await supervisor.round();
    assert.deepEqual((await store.heal.readAll()).get('heal-test')!.suspects.map((s) => s.host), ['MySQL001A']);
    // The services probe it through their own pools, and reach it.
    await beatAll();
    assert.deepEqual([...(await store.services.readAll()).values()].map((b) => b.reach?.map((r) => [r.host, r.ok])), [[['MySQL001A', true]], [['MySQL001A', true]]]);
    for (let i = 0; i < 4; i++) {
      await supervisor.round();
      await beatAll();
    }
    assert.deepEqual(failovers, [], 'a master the services reach is not failed over');
    const kept = decisions.filter((d) => d.master === 'MySQL001A').at(-1)!;
    assert.equal(kept.verdict, 'suspect');
    assert.match(kept.reason!, /2 of 2 live service\(s\) still reach it/);
    assert.deepEqual(kept.evidence.witness?.reaching.sort(), ['web-0', 'web-1']);
    const status = (await store.heal.readAll()).get('heal-test')!;
    assert.equal(status.pairs.find((p) => p.master === 'MySQL001A')!.verdict, 'suspect');
    assert.equal(status.pairs.find((p) => p.master === 'MySQL002A')!.verdict, 'healthy');
    // Now the services lose it too: the next round after their word fails it over.
    for (const b of backends) b.reachable.delete('MySQL001A');
    await beatAll();
    await supervisor.round();
    assert.deepEqual(failovers, ['MySQL001A']);
    const failed = decisions.find((d) => d.verdict === 'failover')!;
    assert.match(failed.reason!, /as did every live service \(2\)/);
  } finally {
    for (const k of kits) await k.close();
    for (const b of backends) await b.close();
    await store.close();
    rmSync(root, { recursive: true, force: true });
  }
});
