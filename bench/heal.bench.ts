/**
 * Automatic failover, measured as a client sees it: a 1-pair MariaDB dev cluster (semi-sync), two
 * services writing, `shardkit heal --mode act` running; kill -9 of the master, then the time to
 * the first write acknowledged by the new master. Then the old master is rebuilt as the slave and
 * the cycle repeats the other way. Beside it in the same run, the same kill answered at once by a
 * scripted `shardkit failover --emergency` (the best a human with a pager could do): the
 * supervisor's cost is its detection (probes x interval). Anchors (issue #31): VTOrc 1.4-2.6 s,
 * Orchestrator 10-13 s; goal p50 <= 3 s, p99 <= 6 s.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { ShardKit } from '../src/kit/shard-kit.js';
import { devUp, devClusterDown, type DevCluster } from '../src/ops/dev-cluster.js';
import { ackedAfter, newLedger, writeLoad } from '../test/failover/ledger.js';
import { CLI, cliProcess, ensureBuilt } from '../test/cli/cli-harness.js';

const CYCLES = Number(process.env.BENCH_CYCLES ?? 4);
const INTERVAL_MS = 500;
const DEAD_AFTER = 3;
const dir = mkdtempSync(join(tmpdir(), 'shardkit-bench-heal-'));
let cluster: DevCluster | undefined;
const kits: ShardKit[] = [];

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length - 1) * p))]!;

/**
 * kill -9 (or SIGSTOP: a frozen master) of `master` under load; `respond` fails it over (or lets
 * heal do it); ms from the fault to the first acknowledged write sent after it.
 */
async function cycle(master: string, respond: () => Promise<void>, fault: 'kill' | 'stop' = 'kill'): Promise<number> {
  await cluster!.instance(master).admin('SET GLOBAL rpl_semi_sync_master_timeout = 600000');
  let release!: () => void;
  const live = newLedger();
  const running = writeLoad(kits, [0, 1], new Promise<void>((r) => (release = r)), 2, live);
  await ackedAfter(live, Date.now());
  const pid = cluster!.instance(master).pid!;
  if (fault === 'kill') await cluster!.instance(master).kill();
  else process.kill(pid, 'SIGSTOP');
  const killedAt = Date.now();
  try {
    await respond();
    for (let i = 0; i < 6000 && !live.acked.some((a) => (a.sentAt ?? 0) > killedAt); i++) await sleep(20);
  } finally {
    release();
  }
  const ledger = await running;
  // A write sent after the kill: one in flight may still be acknowledged by the dying master's kernel.
  return Math.min(...ledger.acked.filter((a) => (a.sentAt ?? 0) > killedAt).map((a) => a.at)) - killedAt;
}

async function rebuild(newMaster: string): Promise<void> {
  const r = await cliProcess(['pair', 'rebuild-slave', newMaster, '--dir', dir]);
  if (r.code !== 0) throw new Error(r.stderr);
  await devUp({ dir, skipInit: true });
  await sleep(500);
}

try {
  ensureBuilt();
  cluster = (await devUp({ dir, pairs: 1, shards: 2, modShards: 2, semiSync: true })).cluster;
  for (let i = 0; i < 2; i++) kits.push(await ShardKit.open({ configPath: cluster.configPath, dataDir: dir }));
  const auto: number[] = [];
  const manual: number[] = [];
  const frozen: number[] = [];
  let master = 'MySQL001A';
  let slave = 'MySQL001B';
  for (let i = 0; i < CYCLES; i++) {
    const heal = spawn(process.execPath, [CLI, 'heal', '--dir', dir, '--mode', 'act', '--interval-ms', String(INTERVAL_MS), '--dead-after', String(DEAD_AFTER), '--flap-window-s', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
    const failedOver = new Promise<void>((resolve) => createInterface({ input: heal.stdout! }).on('line', (l) => {
      if ((JSON.parse(l) as { verdict: string }).verdict === 'failover') resolve();
    }));
    await new Promise<void>((r) => heal.stderr!.on('data', (b: Buffer) => /mode, a probe every/.test(b.toString()) && r()));
    auto.push(await cycle(master, () => failedOver));
    heal.kill('SIGTERM');
    [master, slave] = [slave, master];
    await rebuild(master);
    // A frozen master: only its slave losing it (slave_net_timeout) lets heal act; it is shot first.
    const heal2 = spawn(process.execPath, [CLI, 'heal', '--dir', dir, '--mode', 'act', '--interval-ms', String(INTERVAL_MS), '--dead-after', String(DEAD_AFTER), '--flap-window-s', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
    const failedOver2 = new Promise<void>((resolve) => createInterface({ input: heal2.stdout! }).on('line', (l) => {
      if ((JSON.parse(l) as { verdict: string }).verdict === 'failover') resolve();
    }));
    await new Promise<void>((r) => heal2.stderr!.on('data', (b: Buffer) => /mode, a probe every/.test(b.toString()) && r()));
    frozen.push(await cycle(master, () => failedOver2, 'stop'));
    heal2.kill('SIGTERM');
    [master, slave] = [slave, master];
    await rebuild(master);
    manual.push(await cycle(master, async () => {
      const r = await cliProcess(['failover', master, '--emergency', '--dir', dir]);
      if (r.code !== 0) throw new Error(r.stderr);
    }));
    [master, slave] = [slave, master];
    await rebuild(master);
    console.log(`cycle ${i + 1}: heal ${auto.at(-1)} ms, frozen master with heal ${frozen.at(-1)} ms, scripted failover ${manual.at(-1)} ms`);
  }
  console.log(`kill -9 of the master -> first acknowledged write on the new master, ${CYCLES} cycles each:`);
  console.log(`  shardkit heal (probe every ${INTERVAL_MS} ms, dead after ${DEAD_AFTER}): p50 ${pct(auto, 0.5)} ms, max ${Math.max(...auto)} ms`);
  console.log(`  scripted failover --emergency at once:             p50 ${pct(manual, 0.5)} ms, max ${Math.max(...manual)} ms`);
  console.log(`SIGSTOP of the master -> first acknowledged write on the new master, shardkit heal: p50 ${pct(frozen, 0.5)} ms, max ${Math.max(...frozen)} ms (goal p99 <= 12000 ms; VTOrc 11-13 s)`);
  console.log(`  heal / scripted: ${(pct(auto, 0.5) / pct(manual, 0.5)).toFixed(2)}x (p50); goal p50 <= 3000 ms, p99 <= 6000 ms`);
} finally {
  for (const k of kits) await k.close();
  if (cluster) await devClusterDown(cluster);
  rmSync(dir, { recursive: true, force: true });
}
