/**
 * The CI chaos schedule of one engine: every kind of fault it takes once, in a seeded order,
 * against a 2-pair dev fleet under two services' writes, with `shardkit heal --mode act --witness
 * services` supervising (chaos-run.ts). The seed is printed; CHAOS_SEED=N replays a run. One file
 * per engine (chaos.test.ts, chaos-postgres.test.ts), so CI runs them side by side.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ensureBuilt } from '../cli/cli-harness.js';
import type { ChaosEngineName } from './chaos-engines.js';
import { runChaos } from './chaos-run.js';
import { faultKinds, schedule } from './chaos-schedule.js';

export function chaosCiTest(engine: ChaosEngineName): void {
  test(`chaos on ${engine}: every fault once under load; 0 acknowledged writes lost, never two writable masters, the fleet heals, verify clean`, async (t) => {
    ensureBuilt();
    const seed = process.env.CHAOS_SEED !== undefined ? Number(process.env.CHAOS_SEED) : Math.floor(Math.random() * 2 ** 31);
    t.diagnostic(`seed ${seed} (replay: CHAOS_SEED=${seed})`);
    const faults = schedule(seed, { kinds: faultKinds(engine), pairs: 2, services: 2 });
    const s = await runChaos({ engine, seed, faults, pairs: 2, shards: 8, log: (m) => t.diagnostic(m) });
    t.diagnostic(JSON.stringify({ ...s, lost: s.lost.length, doubleWriters: s.doubleWriters.length }));
    assert.ok(s.acked > 0);
    assert.deepEqual(s.lost, [], `seed ${seed}: acknowledged writes lost`);
    assert.deepEqual(s.doubleWriters, [], `seed ${seed}: two writable masters in one pair`);
    assert.equal(s.falseFailovers, 0, `seed ${seed}: failovers where none was due`);
    assert.ok(s.outcomes.filter((o) => o.kind === 'kill-master').every((o) => o.failedOver && o.rebuiltByHeal === true), `seed ${seed}: a killed master was not failed over and its pair rebuilt by the supervisor`);
    assert.ok(s.outcomes.filter((o) => o.failedOver).every((o) => o.rebuiltByHeal === true), `seed ${seed}: a pair the supervisor failed over was not rebuilt by it`);
    assert.equal(s.verifyClean, true, `seed ${seed}: shards verify found differences`);
  });
}
