/**
 * Backups of a PostgreSQL fleet given by `--config` alone (#32): the servers of a dev cluster
 * with two pairs, reached as a fleet is, over the network as SHARDKIT_ADMIN_USER (no --dir, no
 * datadir at hand). Under a write load through two services with a ledger: `backup archive`
 * (pg_receivewal), `backup create`, `verify`, `list`; then `restore --to-time T` and `restore`
 * (latest), whole fleet, in place: recovered in a scratch server here and loaded into each
 * master in one transaction, which its standby replays.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ShardKit } from '../../src/kit/shard-kit.js';
import { archivedWalUntil } from '../../src/ops/backup/postgres-wal-archive.js';
import { pgServer } from '../../src/ops/dev/dev-postgres.js';
import { assertBadInput, cli, ensureBuilt } from '../cli/cli-harness.js';
import { newLedger, writeLoad } from '../failover/ledger.js';
import { startTestCluster } from '../mysql/cluster-fixture.js';
import { present, startArchiver, until } from './backup-helpers.js';

type Fixture = Awaited<ReturnType<typeof startTestCluster>>;
const ENV = { SHARDKIT_ADMIN_USER: 'postgres' };

describe('shardkit backup of a PostgreSQL fleet by --config (real PostgreSQL 15, two pairs, reached over the network)', () => {
  let fx: Fixture;
  let to: string;
  let config: string;
  before(async () => {
    ensureBuilt();
    fx = await startTestCluster({ engine: 'postgres', pairs: 2, shards: 4, prefix: 'shardkit-bk-pgfleet-' });
    config = fx.cluster.configPath;
    to = mkdtempSync(join(tmpdir(), 'shardkit-bk-pgfleet-to-'));
  });
  after(async () => {
    rmSync(to, { recursive: true, force: true });
    await fx?.stop();
  });

  /** Pins per shard on `host` (a dash where the table is missing). */
  async function pinCounts(host: string): Promise<string[]> {
    const s = pgServer(fx.cluster, host);
    const out: string[] = [];
    for (let shard = 0; shard < 4; shard++) {
      const [r] = await s.sql<{ n: string }>(`SELECT count(*)::text AS n FROM db${String(shard).padStart(5, '0')}.pins`, [], 'shardkit').catch(() => [{ n: '-' }]);
      out.push(r!.n);
    }
    return out;
  }

  async function standbyCaughtUp(master: string, standby: string): Promise<void> {
    const [at] = await pgServer(fx.cluster, master).sql<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn');
    await until(`${standby} replayed ${at!.lsn}`, async () => {
      const [r] = await pgServer(fx.cluster, standby).sql<{ ok: boolean }>('SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn AS ok', [at!.lsn]);
      return r?.ok === true;
    });
  }

  test('bad input: no admin user: one line, exit 2, nothing written', async () => {
    assertBadInput(await cli(['backup', 'create', '--config', config, '--to', to], { SHARDKIT_ADMIN_USER: '' }), 'no admin user', /set SHARDKIT_ADMIN_USER \(a PostgreSQL superuser\)/);
    assert.deepEqual(readdirSync(to), []);
  });

  test('ledger: archive, backup, verify, list; restore --to-time T and restore (latest), whole fleet in place: every write acknowledged before is back, none sent after; each standby follows', async (t) => {
    const archiver = startArchiver(['--config', config], to, ENV);
    t.after(() => void archiver.child.kill('SIGKILL'));
    const archives = ['PG001A', 'PG002A'].map((u) => join(to, 'archive', u));
    await until('pg_receivewal opened a segment for each pair', () => archives.every((a) => existsSync(a) && readdirSync(a).some((f) => /^[0-9A-F]{24}/.test(f))));
    const kits = await Promise.all([0, 1].map(() => ShardKit.open({ configPath: config, dataDir: fx.dir })));
    const ledger = newLedger();
    let release!: () => void;
    const load = writeLoad(kits, [0, 1, 2, 3], new Promise<void>((r) => (release = r)), 2, ledger);
    let started = 0;
    let ended = 0;
    let T = 0;
    let id = '';
    try {
      await until('writes before the backup', () => ledger.acked.length >= 100);
      started = Date.now();
      const b = await cli(['backup', 'create', '--config', config, '--to', to, '--json'], ENV);
      ended = Date.now();
      assert.equal(b.code, 0, b.stderr);
      const m = JSON.parse(b.stdout) as { id: string; engine: string; units: Array<{ unit: string; source: string; position: string }> };
      id = m.id;
      assert.equal(m.engine, 'postgres');
      assert.deepEqual(m.units.map((u) => [u.unit, u.source]), [['PG001A', 'PG001B'], ['PG002A', 'PG002B']], 'each pair copied from its standby');
      await until('writes after the backup', () => ledger.acked.filter((a) => a.sentAt! > ended).length >= 50);
      T = Date.now();
      await until('writes sent after T', () => ledger.acked.filter((a) => a.sentAt! > T).length >= 50);
      const refused = await cli(['backup', 'restore', '--config', config, '--from', to], ENV);
      assert.equal(refused.code, 2, refused.stderr);
      assert.match(refused.stderr, /PRECONDITION_FAILED: .*stop the services first/);
    } finally {
      release();
      await load;
      await Promise.all(kits.map((k) => k.close()));
    }
    for (const a of archives) await until(`${a} holds a commit after T`, async () => ((await archivedWalUntil(a)) ?? 0) >= T);
    archiver.child.kill('SIGTERM');
    assert.equal(await archiver.exit, 0, archiver.stderr());

    const v = await cli(['backup', 'verify', '--config', config, '--from', to, '--json'], ENV);
    assert.equal(v.code, 0, v.stderr);
    const report = JSON.parse(v.stdout) as { differing: string[]; rows: number; units: number };
    assert.deepEqual([report.differing, report.units], [[], 2]);
    assert.ok(report.rows >= 100, `${report.rows} rows`);
    const l = await cli(['backup', 'list', '--from', to, '--json']);
    assert.deepEqual((JSON.parse(l.stdout) as { backups: Array<{ id: string; complete: boolean; units: number }> }).backups.map((x) => [x.id, x.complete, x.units]), [[id, true, 2]]);

    const kit = await ShardKit.open({ configPath: config, dataDir: fx.dir });
    try {
      const pitr = await cli(['backup', 'restore', '--config', config, '--from', to, '--to-time', new Date(T).toISOString(), '--json'], ENV);
      assert.equal(pitr.code, 0, pitr.stderr);
      const beforeT = ledger.acked.filter((a) => a.at < T).map((a) => a.id);
      const afterT = ledger.acked.filter((a) => a.sentAt! >= T).map((a) => a.id);
      assert.equal(await present(kit, beforeT), beforeT.length, 'every write acknowledged before T is back');
      assert.equal(await present(kit, afterT), 0, 'no write sent at or after T is there');
      for (const [m, s] of [['PG001A', 'PG001B'], ['PG002A', 'PG002B']] as const) {
        await standbyCaughtUp(m, s);
        assert.deepEqual(await pinCounts(s), await pinCounts(m), `${s} replayed the restore of ${m}`);
      }

      const latest = await cli(['backup', 'restore', '--config', config, '--from', to, '--force'], ENV);
      assert.equal(latest.code, 0, latest.stderr);
      const beforeBackup = ledger.acked.filter((a) => a.at < started).map((a) => a.id);
      const afterBackup = ledger.acked.filter((a) => a.sentAt! > ended).map((a) => a.id);
      assert.equal(await present(kit, beforeBackup), beforeBackup.length, 'every write acknowledged before the backup is back');
      assert.equal(await present(kit, afterBackup), 0, 'no write sent after the backup is there');
      const o = await kit.objects.create('pin', { after: 'restore' }, { shard: 3 });
      assert.equal((await kit.objects.get(o.id)).id, o.id, 'the restored master takes writes');
    } finally {
      await kit.close();
    }
  });
});
