/**
 * Restore of one shard to a time T into a live fleet (issue #32's benchmark: ~30k rows, <= 10 s):
 * one pair, SHARDS shards of PER_SHARD pin rows (~300 bytes each), the archiver running, a full
 * backup, more writes to shard 2, T, more writes; then, per engine (ENGINE=mariadb|postgres|both):
 *   - raw: the same shard's rows copied from the live slave onto the spare pair's master with the
 *     stock pipe (`mariadb-dump db00002 | mariadb`, `pg_dump -n db00002 | psql`): the floor of
 *     moving that shard, with no restore to T at all;
 *   - shardkit: `backup restore --shards 2 --to-time T --into SPARE` end to end as an operator runs
 *     it (the CLI process: the pair restored aside in a scratch server with the log replayed to T,
 *     the shard loaded onto the spare, verified, frozen, fenced and switched), with its phases.
 * Prints both times and the ratio raw/shardkit.
 *
 *   PER_SHARD=30000 SHARDS=8 ENGINE=both node --import tsx bench/restore-shard.bench.ts
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { sh, timed } from './bench-shell.js';
import { createBackup, DirectoryTarget, openBackupEngine } from '../src/ops/backup/index.js';
import { archivedUntil } from '../src/ops/backup/mariadb-binlog-archive.js';
import { archivedWalUntil } from '../src/ops/backup/postgres-wal-archive.js';
import { PG_DATABASE, pgServer } from '../src/ops/dev/dev-postgres.js';
import { devClusterDown, devUp, DevCluster } from '../src/ops/dev-cluster.js';
import { devHostAdmin } from '../src/ops/failover/host-admin.js';
import { DEFAULT_POSTGRES_BIN } from '../src/ops/postgres/postgres-instance.js';

const PER_SHARD = Number(process.env.PER_SHARD ?? 30_000);
const SHARDS = Number(process.env.SHARDS ?? 8);
const ENGINES = (process.env.ENGINE ?? 'both') === 'both' ? ['mariadb', 'postgres'] : [process.env.ENGINE!];
const SHARD = 2;
const db = (s: number) => `db${String(s).padStart(5, '0')}`;
const PG_BIN = process.env.SHARDKIT_POSTGRES_BIN ?? DEFAULT_POSTGRES_BIN;
const CLI = new URL('../dist/cli/main.js', import.meta.url).pathname;
const load = () => loadavg().map((l) => l.toFixed(1)).join(' ');

function cli(args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('close', (code) => resolve({ code, out, err }));
  });
}

async function until(check: () => Promise<boolean> | boolean): Promise<void> {
  const deadline = Date.now() + 120_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function run(engine: 'mariadb' | 'postgres'): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), `shardkit-bench-into-${engine}-`));
  const to = mkdtempSync(join(tmpdir(), 'shardkit-bench-into-to-'));
  let cluster: DevCluster | undefined;
  const archiver = { child: undefined as ReturnType<typeof spawn> | undefined };
  try {
    cluster = (await devUp({ dir, engine, pairs: 1, shards: SHARDS })).cluster;
    const master = engine === 'mariadb' ? 'MySQL001A' : 'PG001A';
    const slave = engine === 'mariadb' ? 'MySQL001B' : 'PG001B';
    const admin = engine === 'mariadb' ? devHostAdmin(cluster) : undefined;
    const insert = async (shard: number, n: number) => {
      if (admin !== undefined) {
        const c = await admin.connect(master);
        await c.query(`INSERT INTO \`${db(shard)}\`.pins (data) SELECT CONCAT('{"i":', seq, ',"pad":"', REPEAT('x', 260), '"}') FROM \`${db(shard)}\`.seq_1_to_${n}`);
        await c.end();
      } else {
        await pgServer(cluster!, master).sql(`INSERT INTO ${db(shard)}.pins (data, ts) SELECT '{"i":' || g || ',"pad":"' || repeat(md5(g::text), 8) || '"}', g FROM generate_series(1, ${n}) g`, [], PG_DATABASE);
      }
    };
    archiver.child = spawn(process.execPath, [CLI, 'backup', 'archive', '--dir', dir, '--to', to], { stdio: 'ignore' });
    const archive = join(to, 'archive', master);
    await until(() => existsSync(archive) && readdirSync(archive).length > 0);
    for (let s = 0; s < SHARDS; s++) await insert(s, PER_SHARD);
    if (engine === 'mariadb') await cluster.waitForReplication(600_000);
    else {
      const [{ lsn }] = await pgServer(cluster, master).sql<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn') as [{ lsn: string }];
      await until(async () => (await pgServer(cluster!, slave).sql<{ ok: boolean }>('SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn AS ok', [lsn]))[0]?.ok === true);
    }
    const engineB = await openBackupEngine({ dir });
    try {
      await createBackup(engineB, new DirectoryTarget(to), { progress: 'silent' });
    } finally {
      await engineB.close();
    }
    await insert(SHARD, 1000);
    // MariaDB's binlog stamps events in whole seconds: T on a second, with writes on both sides of it.
    await new Promise((r) => setTimeout(r, 1100));
    const T = Math.ceil(Date.now() / 1000) * 1000;
    await new Promise((r) => setTimeout(r, Math.max(0, T - Date.now()) + 100));
    await insert(SHARD, 1000);
    await until(async () => ((engine === 'mariadb' ? await archivedUntil(archive) : await archivedWalUntil(archive)) ?? 0) >= T);
    const added = await cli(['dev', 'add-pair', '--dir', dir, '--json']);
    if (added.code !== 0) throw new Error(added.err);
    cluster = DevCluster.require(dir);
    const all = engine === 'mariadb' ? devHostAdmin(cluster) : undefined;
    const spare = engine === 'mariadb' ? ['MySQL002A', 'MySQL002B'] : ['PG002A', 'PG002B'];

    const rawMs = engine === 'mariadb'
      ? await timed(() => sh(`mariadb ${all!.clientArgs(spare[0]!).join(' ')} -e 'CREATE DATABASE raw_copy' && mariadb-dump ${all!.clientArgs(slave).join(' ')} --single-transaction --hex-blob ${db(SHARD)} | mariadb ${all!.clientArgs(spare[0]!).join(' ')} -D raw_copy`))
      : await timed(async () => {
        const s = pgServer(cluster!, slave);
        const t = pgServer(cluster!, spare[0]!);
        await t.sql('CREATE DATABASE raw_copy');
        await sh(`${PG_BIN}/pg_dump -h ${s.host} -p ${s.port} -U postgres -n ${db(SHARD)} -d ${PG_DATABASE} | ${PG_BIN}/psql -h ${t.host} -p ${t.port} -U postgres -d raw_copy -q -X`);
      });

    let r: { code: number | null; out: string; err: string } | undefined;
    const oursMs = await timed(async () => (r = await cli(['backup', 'restore', '--dir', dir, '--from', to, '--shards', String(SHARD), '--to-time', new Date(T).toISOString(), '--into', spare[0]!, '--into-slave', spare[1]!, '--json'])));
    if (r!.code !== 0) throw new Error(r!.err);
    const events = r!.out.trim().split('\n').map((l) => JSON.parse(l) as { event: string; phase?: string; elapsedMs?: number; freezeToSwitchMs?: number; verifiedRows?: number });
    const at = (phase: string) => events.find((e) => e.event === 'phase' && e.phase === phase)?.elapsedMs ?? Number.NaN;
    const result = events.at(-1)!;
    console.log(`${engine}: one shard (${result.verifiedRows} rows restored as of T; the pair ${SHARDS * PER_SHARD + 2000} rows) into a spare pair: raw copy of the shard ${(rawMs / 1000).toFixed(1)} s, shardkit restore --to-time --into ${(oursMs / 1000).toFixed(1)} s end to end (restore aside ${(at('copied') / 1000).toFixed(1)} s, switched at ${(at('switched') / 1000).toFixed(1)} s, writes held ${result.freezeToSwitchMs} ms), ratio ${(rawMs / oursMs).toFixed(2)}x; goal <= 10 s: ${oursMs <= 10_000 ? 'met' : 'NOT met'}; load ${load()}`);
  } finally {
    archiver.child?.kill('SIGTERM');
    if (cluster) await devClusterDown(cluster);
    rmSync(dir, { recursive: true, force: true });
    rmSync(to, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  console.log(`restore-shard bench: ${SHARDS} shards x ${PER_SHARD} rows, engines ${ENGINES.join(', ')}, load ${load()}`);
  for (const e of ENGINES) await run(e as 'mariadb' | 'postgres');
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
