/**
 * Failover on real MariaDB pairs (dev cluster, 1 pair, loopback): planned failover write pause
 * seen by clients and acknowledged writes lost; emergency failover (kill -9 of the master) time
 * from the command to the first successful write, and writes lost with semi-sync vs async.
 * Library calls in-process (no CLI start-up in the figures); 2 ShardKit instances x 2 writers.
 * There is no peer to compare with in the same run (Vitess is not installed); RESULTS.md cites
 * the figures Vitess documents instead.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ShardKit } from '../src/kit/shard-kit.js';
import { devUp, DevCluster } from '../src/ops/dev-cluster.js';
import { openFleet } from '../src/ops/failover/failover-context.js';
import { emergencyFailover } from '../src/ops/failover/emergency-failover.js';
import { plannedFailover } from '../src/ops/failover/planned-failover.js';
import { rebuildSlave } from '../src/ops/failover/rebuild-slave.js';
import { missingOn, percentile, writeLoad, type Ledger } from '../test/failover/ledger.js';

const PLANNED_ROUNDS = Number(process.env.PLANNED_ROUNDS ?? 6);
const EMERGENCY_ROUNDS = Number(process.env.EMERGENCY_ROUNDS ?? 3);

async function withCluster<T>(semiSync: boolean, fn: (dir: string, kits: ShardKit[]) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-fobench-'));
  let kits: ShardKit[] = [];
  try {
    const { cluster } = await devUp({ dir, pairs: 1, shards: 2, modShards: 2, semiSync });
    kits = await Promise.all([0, 1].map(() => ShardKit.open({ configPath: cluster.configPath, dataDir: dir })));
    return await fn(dir, kits);
  } finally {
    await Promise.all(kits.map((k) => k.close()));
    await DevCluster.open(dir)?.down();
    rmSync(dir, { recursive: true, force: true });
  }
}

const masterOf = async (kit: ShardKit) => (await kit.shardMap()).objectRanges()[0]!.master;

/** `freeze`: the range freeze of issue #18 (services hold writes); false: read_only alone (writes refused and retried). */
async function planned(freeze: boolean): Promise<void> {
  await withCluster(false, async (dir, kits) => {
    const pauses: number[] = [];
    const gaps: number[] = [];
    const fences: number[] = [];
    let acked = 0;
    let lost = 0;
    let errors = 0;
    for (let i = 0; i < PLANNED_ROUNDS; i++) {
      const master = await masterOf(kits[0]!);
      let release!: () => void;
      const running = writeLoad(kits, [0, 1], new Promise<void>((r) => (release = r)));
      await sleep(500);
      const fleet = openFleet({ dir });
      const r = await plannedFailover(fleet, master, { freeze }).finally(() => fleet.close());
      await sleep(700);
      release();
      const ledger: Ledger = await running;
      fences.push(r.writePauseMs);
      pauses.push(...ledger.pauses);
      gaps.push(...ledger.gaps);
      acked += ledger.acked.length;
      errors += [...ledger.errors.values()].reduce((a, b) => a + b, 0);
      lost += (await missingOn(DevCluster.require(dir), r.newMaster, ledger.acked)).length;
    }
    console.log(`planned failover ${freeze ? 'WITH the range freeze (writes held)' : 'with read_only alone (writes refused)'}, ${PLANNED_ROUNDS} rounds (back and forth): ${acked} acknowledged writes, ${lost} lost, ${errors} failed writes (retried)`);
    console.log(`  client-seen write pause (longest gap between a writer's acknowledgments): p50 ${percentile(gaps, 50)} ms, p99 ${percentile(gaps, 99)} ms, max ${Math.max(0, ...gaps)} ms (${gaps.length} writers x rounds)`);
    console.log(`  runs of failed writes: ${pauses.length}, p50 ${percentile(pauses, 50)} ms, max ${Math.max(0, ...pauses)} ms`);
    console.log(`  ${freeze ? 'freeze' : 'read_only'} on the old master -> map names the new master: p50 ${percentile(fences, 50)} ms, max ${Math.max(...fences)} ms`);
  });
}

async function emergency(semiSync: boolean): Promise<void> {
  await withCluster(semiSync, async (dir, kits) => {
    const firstWrite: number[] = [];
    const commandMs: number[] = [];
    let acked = 0;
    let lost = 0;
    let diverged = 0;
    for (let i = 0; i < EMERGENCY_ROUNDS; i++) {
      const cluster = DevCluster.require(dir);
      const master = await masterOf(kits[0]!);
      let release!: () => void;
      const running = writeLoad(kits, [0, 1], new Promise<void>((r) => (release = r)));
      await sleep(700);
      await cluster.instance(master).kill();
      const started = Date.now();
      const fleet = openFleet({ dir });
      const r = await emergencyFailover(fleet, master).finally(() => fleet.close());
      commandMs.push(Date.now() - started);
      await sleep(1000);
      release();
      const ledger = await running;
      const after = ledger.acked.filter((a) => a.at > started).map((a) => a.at);
      firstWrite.push(Math.min(...after) - started);
      acked += ledger.acked.length;
      lost += (await missingOn(cluster, r.newMaster, ledger.acked)).length;
      await devUp({ dir, skipInit: true });
      const f2 = openFleet({ dir });
      diverged += (await rebuildSlave(f2, r.newMaster).finally(() => f2.close())).divergedTransactions;
    }
    console.log(`emergency failover (${semiSync ? 'semi-sync AFTER_SYNC' : 'async'}), ${EMERGENCY_ROUNDS} rounds: ${acked} acknowledged writes, ${lost} lost; old masters held ${diverged} unreplicated transactions`);
    console.log(`  command: p50 ${percentile(commandMs, 50)} ms, max ${Math.max(...commandMs)} ms; command start -> first successful write: p50 ${percentile(firstWrite, 50)} ms, max ${Math.max(...firstWrite)} ms`);
  });
}

// FAILOVER_BENCH=planned runs the planned part only (both fences, same run).
const only = process.env.FAILOVER_BENCH;
if (only === undefined || only === 'planned') {
  await planned(false);
  await planned(true);
}
if (only === undefined || only === 'emergency') {
  await emergency(true);
  await emergency(false);
}
