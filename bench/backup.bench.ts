/**
 * Backups at size (issue #32 item 5): one pair, 4 shards, ROWS pin rows (~300 bytes each) made
 * by the server itself. In the same run, per engine (ENGINE=mariadb|postgres|both):
 *   1. the raw tool from the slave into a gzip file: `mariadb-dump --single-transaction | gzip -1`
 *      (what shardkit's MariaDB engine runs; mariadb-backup is not in the installed packages) or
 *      `pg_basebackup -Ft -X fetch -D - | gzip -1` from the standby, and (PostgreSQL) also
 *      `pg_basebackup --compress=client-gzip:1` alone, the flags shardkit runs it with;
 *   2. `backup create` (the same tool, plus pausing the applier and the per-table row counts and
 *      checksums the manifest holds), timed;
 *   3. restore: MariaDB `gunzip | mariadb` into the master beside `backup restore --force`;
 *      PostgreSQL `backup restore --force` (extract, recover to the LSN, promote, rebuild the
 *      standby), with tar extraction alone as its raw part.
 * Prints each time and the ratio raw/shardkit (>= 0.9x is the goal for the backup).
 *
 *   ROWS=1000000 ENGINE=both node --import tsx bench/backup.bench.ts
 */
import { sh, timed } from './bench-shell.js';
import { mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createBackup, DirectoryTarget, openBackupEngine, restoreBackup } from '../src/ops/backup/index.js';
import { PG_DATABASE, pgServer } from '../src/ops/dev/dev-postgres.js';
import { devClusterDown, devUp, DevCluster } from '../src/ops/dev-cluster.js';
import { devHostAdmin } from '../src/ops/failover/host-admin.js';
import { DEFAULT_POSTGRES_BIN } from '../src/ops/postgres/postgres-instance.js';

const ROWS = Number(process.env.ROWS ?? 1_000_000);
const ENGINES = (process.env.ENGINE ?? 'both') === 'both' ? ['mariadb', 'postgres'] : [process.env.ENGINE!];
const SHARDS = 4;
const db = (s: number) => `db${String(s).padStart(5, '0')}`;
const PG_BIN = process.env.SHARDKIT_POSTGRES_BIN ?? DEFAULT_POSTGRES_BIN;


const line = (what: string, raw: number, ours: number, extra = '') => console.log(`${what}: raw ${(raw / 1000).toFixed(1)} s, shardkit ${(ours / 1000).toFixed(1)} s, ratio ${(raw / ours).toFixed(2)}x${extra}`);

async function mariadb(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-bench-backup-my-'));
  let cluster: DevCluster | undefined;
  try {
    cluster = (await devUp({ dir, pairs: 1, shards: SHARDS })).cluster;
    const admin = devHostAdmin(cluster);
    const per = Math.ceil(ROWS / SHARDS);
    const m = await admin.connect('MySQL001A');
    for (let s = 0; s < SHARDS; s++) await m.query(`INSERT INTO \`${db(s)}\`.pins (data) SELECT CONCAT('{"i":', seq, ',"pad":"', REPEAT('x', 260), '"}') FROM \`${db(s)}\`.seq_1_to_${per}`);
    await m.end();
    await cluster.waitForReplication(600_000);
    const dbs = Array.from({ length: SHARDS }, (_, s) => db(s));
    const out = mkdtempSync(join(tmpdir(), 'shardkit-bench-backup-out-'));
    try {
      const rawFile = join(out, 'raw.sql.gz');
      const rawMs = await timed(() => sh(`mariadb-dump ${admin.clientArgs('MySQL001B').join(' ')} --single-transaction --routines --triggers --events --hex-blob --databases ${dbs.join(' ')} | gzip -1 > ${rawFile}`));
      const engine = await openBackupEngine({ dir });
      try {
        const target = new DirectoryTarget(join(out, 'backups'));
        let bytes = 0;
        const oursMs = await timed(async () => (bytes = (await createBackup(engine, target, { progress: 'silent' })).units[0]!.bytes));
        line(`mariadb backup, ${per * SHARDS} rows`, rawMs, oursMs, ` (gzip ${(statSync(rawFile).size / 1e6).toFixed(0)} MB raw, ${(bytes / 1e6).toFixed(0)} MB shardkit)`);
        const rawRestoreMs = await timed(() => sh(`gunzip -c ${rawFile} | mariadb ${admin.clientArgs('MySQL001A').join(' ')}`));
        await cluster.waitForReplication(600_000);
        const oursRestoreMs = await timed(() => restoreBackup(engine, target, { force: true, progress: 'silent' }));
        line('mariadb restore (into the master, the slave replays)', rawRestoreMs, oursRestoreMs);
      } finally {
        await engine.close();
      }
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  } finally {
    if (cluster) await devClusterDown(cluster);
    rmSync(dir, { recursive: true, force: true });
  }
}

async function postgres(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-bench-backup-pg-'));
  let cluster: DevCluster | undefined;
  try {
    cluster = (await devUp({ dir, engine: 'postgres', pairs: 1, shards: SHARDS })).cluster;
    const master = pgServer(cluster, 'PG001A');
    const standby = pgServer(cluster, 'PG001B');
    const per = Math.ceil(ROWS / SHARDS);
    for (let s = 0; s < SHARDS; s++) await master.sql(`INSERT INTO ${db(s)}.pins (data, ts) SELECT '{"i":' || g || ',"pad":"' || repeat(md5(g::text), 8) || '"}', g FROM generate_series(1, ${per}) g`, [], PG_DATABASE);
    await master.sql('CHECKPOINT');
    // Wait for the standby to replay everything: the backups below start from the same state.
    const [{ lsn }] = await master.sql<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn') as [{ lsn: string }];
    for (;;) {
      const [r] = await standby.sql<{ ok: boolean }>('SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn AS ok', [lsn]);
      if (r?.ok) break;
      await new Promise((res) => setTimeout(res, 100));
    }
    const out = mkdtempSync(join(tmpdir(), 'shardkit-bench-backup-out-'));
    try {
      const rawFile = join(out, 'raw.tar.gz');
      const rawMs = await timed(() => sh(`${PG_BIN}/pg_basebackup -h ${standby.host} -p ${standby.port} -U postgres -D - -Ft -X fetch -c fast --no-manifest | gzip -1 > ${rawFile}`));
      const engine = await openBackupEngine({ dir });
      try {
        const target = new DirectoryTarget(join(out, 'backups'));
        let bytes = 0;
        const oursMs = await timed(async () => (bytes = (await createBackup(engine, target, { progress: 'silent' })).units[0]!.bytes));
        line(`postgres backup, ${per * SHARDS} rows`, rawMs, oursMs, ` (gzip ${(statSync(rawFile).size / 1e6).toFixed(0)} MB raw, ${(bytes / 1e6).toFixed(0)} MB shardkit)`);
        // The same tool with the compression shardkit asks of it (in pg_basebackup's own process).
        const ownFile = join(out, 'own.tar.gz');
        const ownMs = await timed(() => sh(`${PG_BIN}/pg_basebackup -h ${standby.host} -p ${standby.port} -U postgres -D - -Ft -X fetch -c fast --no-manifest --compress=client-gzip:1 > ${ownFile}`));
        line('postgres backup against `pg_basebackup --compress=client-gzip:1` alone', ownMs, oursMs, ` (${(statSync(ownFile).size / 1e6).toFixed(0)} MB)`);
        const extract = join(out, 'extract');
        mkdirSync(extract);
        const rawRestoreMs = await timed(() => sh(`gunzip -c ${rawFile} | tar -x -C ${extract}`));
        const oursRestoreMs = await timed(() => restoreBackup(engine, target, { force: true, progress: 'silent' }));
        line('postgres restore (raw: extraction only; shardkit: extract, recover, promote, rebuild the standby)', rawRestoreMs, oursRestoreMs);
      } finally {
        await engine.close();
      }
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  } finally {
    if (cluster) await devClusterDown(cluster);
    if (process.env.KEEP === undefined) rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  console.log(`backup bench: ${ROWS} rows, engines ${ENGINES.join(', ')}, load ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
  if (ENGINES.includes('mariadb')) await mariadb();
  if (ENGINES.includes('postgres')) await postgres();
  console.log(`load after: ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
