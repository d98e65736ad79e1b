/**
 * Backups of a fleet given by `--config` alone (#32), on both server engines: the servers of a
 * dev cluster with two pairs, reached as a fleet is, over the network with the admin account of
 * the environment (as failover), never through the dev cluster's sockets or datadirs. Under a
 * write load through two services with a ledger: `backup archive`, `backup create`, `verify`,
 * `list`; then `restore --to-time T` and `restore` (latest), whole fleet, in place, each slave
 * following its master. PostgreSQL recovers each copy in a scratch server here and loads it into
 * the master in one transaction; MariaDB loads its dump into the master.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ShardKit } from '../../src/kit/shard-kit.js';
import { archivedUntil } from '../../src/ops/backup/mariadb-binlog-archive.js';
import { archivedWalUntil } from '../../src/ops/backup/postgres-wal-archive.js';
import { pgServer } from '../../src/ops/dev/dev-postgres.js';
import type { DevCluster } from '../../src/ops/dev-cluster.js';
import { assertBadInput, cli, ensureBuilt } from '../cli/cli-harness.js';
import { newLedger, writeLoad } from '../failover/ledger.js';
import { startTestCluster } from '../mysql/cluster-fixture.js';
import { present, startArchiver, until } from './backup-helpers.js';

type Fixture = Awaited<ReturnType<typeof startTestCluster>>;

/** What differs between the engines: names, the admin account, reading a server directly. */
interface Side {
  pairs: Array<[string, string]>;
  /** The admin account's environment (made on the servers for MariaDB: its dev root is socket-only). */
  env(c: DevCluster): Promise<Record<string, string>>;
  noAdmin: RegExp;
  /** `shard: pins` for each shard `host` holds. */
  counts(c: DevCluster, host: string): Promise<string[]>;
  /** Resolves once every slave replayed all its master wrote. */
  caughtUp(c: DevCluster): Promise<void>;
  /** The time (ms) up to which a pair's archive directory can restore. */
  archivedUntil(dir: string): Promise<number | undefined>;
}

const SIDES: Record<'postgres' | 'mariadb', Side> = {
  postgres: {
    pairs: [['PG001A', 'PG001B'], ['PG002A', 'PG002B']],
    env: async () => ({ SHARDKIT_ADMIN_USER: 'postgres' }),
    noAdmin: /set SHARDKIT_ADMIN_USER \(a PostgreSQL superuser\)/,
    counts: async (c, host) => {
      const server = pgServer(c, host);
      const shards = await server.sql<{ s: string }>("SELECT table_schema AS s FROM information_schema.tables WHERE table_name = 'pins' ORDER BY 1", [], 'shardkit');
      return Promise.all(shards.map(async ({ s }) => `${s}: ${(await server.sql<{ n: string }>(`SELECT count(*)::text AS n FROM ${s}.pins`, [], 'shardkit'))[0]!.n}`));
    },
    caughtUp: async (c) => {
      for (const [m, s] of SIDES.postgres.pairs) {
        const [at] = await pgServer(c, m).sql<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn');
        await until(`${s} replayed ${at!.lsn}`, async () => (await pgServer(c, s).sql<{ ok: boolean }>('SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn AS ok', [at!.lsn]))[0]?.ok === true);
      }
    },
    archivedUntil: (dir) => archivedWalUntil(dir),
  },
  mariadb: {
    pairs: [['MySQL001A', 'MySQL001B'], ['MySQL002A', 'MySQL002B']],
    env: async (c) => {
      const password = 'backup-admin-pw';
      for (const [m, s] of SIDES.mariadb.pairs) {
        for (const host of [m, s]) await c.instance(host).admin('SET SESSION sql_log_bin = 0', `CREATE USER IF NOT EXISTS 'bk_admin'@'%' IDENTIFIED BY '${password}'`, "GRANT ALL PRIVILEGES ON *.* TO 'bk_admin'@'%' WITH GRANT OPTION");
      }
      return { SHARDKIT_ADMIN_USER: 'bk_admin', SHARDKIT_ADMIN_PASSWORD: password, SHARDKIT_REPL_USER: c.state.replUser, SHARDKIT_REPL_PASSWORD: c.state.replPassword };
    },
    noAdmin: /set SHARDKIT_ADMIN_USER \(with SUPER\)/,
    counts: async (c, host) => {
      const shards = await c.instance(host).admin<Array<{ s: string }>>("SELECT TABLE_SCHEMA AS s FROM information_schema.TABLES WHERE TABLE_NAME = 'pins' ORDER BY 1");
      return Promise.all(shards.map(async ({ s }) => `${s}: ${(await c.instance(host).admin<Array<{ n: number }>>(`SELECT COUNT(*) AS n FROM ${s}.pins`))[0]!.n}`));
    },
    caughtUp: (c) => c.waitForReplication(),
    // Binlog events are stamped in whole seconds: the archive reaches the end of its last second.
    archivedUntil: async (dir) => {
      const t = await archivedUntil(dir);
      return t === undefined ? undefined : t + 999;
    },
  },
};

for (const engine of ['postgres', 'mariadb'] as const) {
  const side = SIDES[engine];
  describe(`shardkit backup of a ${engine} fleet by --config (two pairs, reached over the network)`, () => {
    let fx: Fixture;
    let to: string;
    let config: string;
    let env: Record<string, string>;
    before(async () => {
      ensureBuilt();
      fx = await startTestCluster({ ...(engine === 'postgres' ? { engine } : {}), pairs: 2, shards: 4, prefix: `shardkit-bk-fleet-${engine}-` });
      config = fx.cluster.configPath;
      env = await side.env(fx.cluster);
      to = mkdtempSync(join(tmpdir(), `shardkit-bk-fleet-${engine}-to-`));
    });
    after(async () => {
      rmSync(to, { recursive: true, force: true });
      await fx?.stop();
    });

    test('bad input: no admin user: one line, exit 2, nothing written', async () => {
      assertBadInput(await cli(['backup', 'create', '--config', config, '--to', to], { SHARDKIT_ADMIN_USER: '' }), 'no admin user', side.noAdmin);
      assert.deepEqual(readdirSync(to), []);
    });

    test('ledger: archive, backup, verify, list; restore --to-time T and restore (latest), whole fleet in place: every write acknowledged before is back, none sent after; each slave follows', async (t) => {
      const archiver = startArchiver(['--config', config], to, env);
      t.after(() => void archiver.child.kill('SIGKILL'));
      const archives = side.pairs.map(([m]) => join(to, 'archive', m));
      await until('the archiver opened a log file for each pair', () => archives.every((a) => existsSync(a) && readdirSync(a).some((f) => f !== 'streamer.pid')));
      const kits = await Promise.all([0, 1].map(() => ShardKit.open({ configPath: config, dataDir: fx.dir })));
      const ledger = newLedger();
      let release!: () => void;
      const load = writeLoad(kits, [0, 1, 2, 3], new Promise<void>((r) => (release = r)), 2, ledger);
      let started = 0;
      let ended = 0;
      let T = 0;
      let id = '';
      try {
        await until('writes before the backup', () => ledger.acked.filter((a) => a.at < Date.now()).length >= 100);
        started = Date.now();
        const b = await cli(['backup', 'create', '--config', config, '--to', to, '--json'], env);
        ended = Date.now();
        assert.equal(b.code, 0, b.stderr);
        const m = JSON.parse(b.stdout) as { id: string; engine: string; units: Array<{ unit: string; source: string }> };
        id = m.id;
        assert.equal(m.engine, engine);
        assert.deepEqual(m.units.map((u) => [u.unit, u.source]), side.pairs, 'each pair copied from its slave');
        await until('writes after the backup', () => ledger.acked.filter((a) => a.sentAt! > ended).length >= 50);
        // On a whole second: MariaDB's binlog stamps events in seconds (docs/backups.md).
        T = Math.ceil(Date.now() / 1000) * 1000;
        await until('writes sent after T', () => ledger.acked.filter((a) => a.sentAt! > T).length >= 50);
        const refused = await cli(['backup', 'restore', '--config', config, '--from', to], env);
        assert.equal(refused.code, 2, refused.stderr);
        assert.match(refused.stderr, /PRECONDITION_FAILED: .*stop the services first/);
      } finally {
        release();
        await load;
        await Promise.all(kits.map((k) => k.close()));
      }
      await side.caughtUp(fx.cluster);
      for (const a of archives) await until(`${a} reaches T`, async () => ((await side.archivedUntil(a)) ?? 0) >= T);
      archiver.child.kill('SIGTERM');
      assert.equal(await archiver.exit, 0, archiver.stderr());

      const v = await cli(['backup', 'verify', '--config', config, '--from', to, '--json'], env);
      assert.equal(v.code, 0, v.stderr);
      const report = JSON.parse(v.stdout) as { differing: string[]; rows: number; units: number };
      assert.deepEqual([report.differing, report.units], [[], 2]);
      assert.ok(report.rows >= 100, `${report.rows} rows`);
      const l = await cli(['backup', 'list', '--from', to, '--json']);
      assert.deepEqual((JSON.parse(l.stdout) as { backups: Array<{ id: string; complete: boolean; units: number }> }).backups.map((x) => [x.id, x.complete, x.units]), [[id, true, 2]]);

      const kit = await ShardKit.open({ configPath: config, dataDir: fx.dir });
      try {
        const pitr = await cli(['backup', 'restore', '--config', config, '--from', to, '--to-time', new Date(T).toISOString(), '--json'], env);
        assert.equal(pitr.code, 0, pitr.stderr);
        const beforeT = ledger.acked.filter((a) => a.at < T).map((a) => a.id);
        const afterT = ledger.acked.filter((a) => a.sentAt! >= T).map((a) => a.id);
        assert.equal(await present(kit, beforeT), beforeT.length, 'every write acknowledged before T is back');
        assert.equal(await present(kit, afterT), 0, 'no write sent at or after T is there');
        await side.caughtUp(fx.cluster);
        for (const [m, s] of side.pairs) assert.deepEqual(await side.counts(fx.cluster, s), await side.counts(fx.cluster, m), `${s} replayed the restore of ${m}`);

        const latest = await cli(['backup', 'restore', '--config', config, '--from', to, '--force'], env);
        assert.equal(latest.code, 0, latest.stderr);
        const beforeBackup = ledger.acked.filter((a) => a.at < started).map((a) => a.id);
        const afterBackup = ledger.acked.filter((a) => a.sentAt! > ended).map((a) => a.id);
        assert.equal(await present(kit, beforeBackup), beforeBackup.length, 'every write acknowledged before the backup is back');
        assert.equal(await present(kit, afterBackup), 0, 'no write sent after the backup is there');
        const o = await kit.objects.create('pin', { after: 'restore' }, { shard: 3 });
        assert.equal((await kit.objects.get(o.id)).id, o.id, 'the restored master takes writes');
        await side.caughtUp(fx.cluster);
        for (const [m, s] of side.pairs) assert.deepEqual(await side.counts(fx.cluster, s), await side.counts(fx.cluster, m), `${s} replayed the restore of ${m}`);
      } finally {
        await kit.close();
      }
    });
  });
}
