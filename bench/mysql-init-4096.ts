/**
 * The seed's full layout on real servers: 8 master/slave pairs of mariadbd, 4096 object shards
 * and 4096 mod shards, created by `shardkit init` (the CLI, as an operator runs it). Takes a few
 * minutes, so it is not a *.bench.ts (npm run bench keeps each under ~90 s):
 *
 *   node --import tsx bench/mysql-init-4096.ts [--concurrency N] [--keep DIR]
 *
 * Prints: init wall time, the second (idempotent) run's time, replication catch-up time, tables
 * per master, disk use and server memory. Stops every server at the end unless --keep.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { devUp, type DevCluster } from '../src/ops/dev-cluster.js';

const args = process.argv.slice(2);
const concurrency = args.includes('--concurrency') ? args[args.indexOf('--concurrency') + 1]! : '4';
const keep = args.includes('--keep');
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'shardkit-init4096-'));

function cli(argv: string[]): Promise<{ code: number; stdout: string; stderr: string; ms: number }> {
  const t = Date.now();
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', join(ROOT, 'src/cli/main.ts'), ...argv], { cwd: ROOT, maxBuffer: 256 * 1024 * 1024 }, (err, stdout, stderr) => {
      resolve({ code: err ? 1 : 0, stdout, stderr, ms: Date.now() - t });
    });
  });
}

function du(path: string): Promise<string> {
  return new Promise((resolve) => execFile('du', ['-sh', path], (_e, out) => resolve(out.split('\t')[0] ?? '?')));
}

let cluster: DevCluster | undefined;
try {
  let t = Date.now();
  cluster = (await devUp({ dir, pairs: 8, shards: 4096, modShards: 4096, skipInit: true })).cluster;
  console.log(`16 servers created and started in ${((Date.now() - t) / 1000).toFixed(1)} s`);
  const config = join(dir, 'shardkit.json');

  const first = await cli(['init', '--config', config, '--json', '--concurrency', concurrency]);
  if (first.code !== 0) throw new Error(`init failed: ${first.stderr.split('\n').slice(-3).join(' ')}`);
  const r1 = JSON.parse(first.stdout) as { total: number; created: number; elapsedMs: number };
  const progressLines = first.stderr.split('\n').filter((l) => l.includes('"op":"init"')).length;
  console.log(`init: ${r1.total} shards (4096 object + 4096 mod) on 8 masters, ${r1.created} created, ${(r1.elapsedMs / 1000).toFixed(1)} s inside init, ${(first.ms / 1000).toFixed(1)} s wall for the command (concurrency ${concurrency} per master; ${progressLines} JSON progress lines)`);

  t = Date.now();
  await cluster.waitForReplication(600_000);
  console.log(`slaves caught up ${((Date.now() - t) / 1000).toFixed(1)} s after init returned`);

  const second = await cli(['init', '--config', config, '--json']);
  const r2 = JSON.parse(second.stdout) as { created: number; elapsedMs: number };
  console.log(`second init: ${r2.created} created, ${(r2.elapsedMs / 1000).toFixed(1)} s inside init, ${(second.ms / 1000).toFixed(1)} s wall`);

  const m = cluster.instance('MySQL001A');
  const s = cluster.instance('MySQL001B');
  const count = "SELECT COUNT(*) AS n FROM information_schema.TABLES WHERE TABLE_SCHEMA LIKE 'db%'";
  const [mc] = await m.admin<Array<{ n: number }>>(count);
  const [sc] = await s.admin<Array<{ n: number }>>(count);
  console.log(`tables on MySQL001A: ${mc!.n}, on its slave MySQL001B: ${sc!.n}`);
  let rss = 0;
  for (const st of await cluster.status()) {
    if (st.pid === null) continue;
    const status = readFileSync(`/proc/${st.pid}/status`, 'utf8');
    rss += Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  }
  console.log(`disk: ${await du(dir)} for 16 servers (MySQL001A: ${await du(m.dir)}); memory: ${(rss / 1024).toFixed(0)} MiB RSS for 16 mariadbd`);
} finally {
  if (!keep) {
    await cluster?.down();
    rmSync(dir, { recursive: true, force: true });
  } else console.log(`kept ${dir} (shardkit dev down --dir ${dir})`);
}
