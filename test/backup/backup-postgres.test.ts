import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { ShardKit } from '../../src/kit/shard-kit.js';
import { pgServer } from '../../src/ops/dev/dev-postgres.js';
import { postgresTableSummaries } from '../../src/ops/backup/postgres-tables.js';
import { cli } from '../cli/cli-harness.js';
import { newLedger, writeLoad } from '../failover/ledger.js';
import { startTestCluster } from '../mysql/cluster-fixture.js';
import { until, present } from './backup-helpers.js';

type Fixture = Awaited<ReturnType<typeof startTestCluster>>;

describe('shardkit backup on a PostgreSQL dev cluster (pg_basebackup from the standby)', () => {
  let fx: Fixture;
  let to: string;
  before(async () => {
    fx = await startTestCluster({ engine: 'postgres', pairs: 1, shards: 4, prefix: 'shardkit-bk-pg-' });
    to = mkdtempSync(join(tmpdir(), 'shardkit-bk-pg-to-'));
  });
  after(async () => {
    rmSync(to, { recursive: true, force: true });
    await fx?.stop();
  });

  test('ledger: writes through two services, a backup, more writes; restore: every write acknowledged before the backup is back, none sent after it; the standby is rebuilt', async () => {
    const kits = await Promise.all([0, 1].map(() => ShardKit.open({ configPath: fx.cluster.configPath, dataDir: fx.dir })));
    const ledger = newLedger();
    let release!: () => void;
    const load = writeLoad(kits, [0, 1, 2, 3], new Promise<void>((r) => (release = r)), 2, ledger);
    let started = 0;
    let ended = 0;
    try {
      await until('writes before the backup', () => ledger.acked.length >= 100);
      started = Date.now();
      const r = await cli(['backup', 'create', '--dir', fx.dir, '--to', to, '--json']);
      ended = Date.now();
      assert.equal(r.code, 0, r.stderr);
      const m = JSON.parse(r.stdout) as { engine: string; units: Array<{ unit: string; source: string; position: string }> };
      assert.equal(m.engine, 'postgres');
      assert.deepEqual(m.units.map((u) => [u.unit, u.source]), [['PG001A', 'PG001B']], 'copied from the standby');
      assert.match(m.units[0]!.position, /^[0-9A-F]+\/[0-9A-F]+$/, 'an LSN in the manifest');
      await until('writes after the backup', () => ledger.acked.filter((a) => a.sentAt! > ended).length >= 50);
    } finally {
      release();
      await load;
    }
    const refused = await cli(['backup', 'restore', '--dir', fx.dir, '--from', to]);
    assert.equal(refused.code, 2, refused.stderr);
    assert.match(refused.stderr, /PRECONDITION_FAILED: .*stop the services first/);
    await Promise.all(kits.map((k) => k.close()));

    const r = await cli(['backup', 'restore', '--dir', fx.dir, '--from', to]);
    assert.equal(r.code, 0, r.stderr);
    const kit = await ShardKit.open({ configPath: fx.cluster.configPath, dataDir: fx.dir });
    try {
      const before = ledger.acked.filter((a) => a.at < started).map((a) => a.id);
      const afterwards = ledger.acked.filter((a) => a.sentAt! > ended).map((a) => a.id);
      assert.equal(await present(kit, before), before.length, 'every write acknowledged before the backup is back');
      assert.equal(await present(kit, afterwards), 0, 'no write sent after the backup is there');
      const o = await kit.objects.create('pin', { after: 'restore' }, { shard: 1 });
      assert.equal((await kit.objects.get(o.id)).id, o.id, 'the restored master takes writes');
    } finally {
      await kit.close();
    }
    const status = await cli(['dev', 'status', '--dir', fx.dir, '--json']);
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, /PG001B/);
  });

  test('verify restores the base backup into a scratch server and matches the manifest', async () => {
    const ok = await cli(['backup', 'verify', '--dir', fx.dir, '--from', to, '--json']);
    assert.equal(ok.code, 0, ok.stderr);
    const report = JSON.parse(ok.stdout) as { differing: string[]; rows: number };
    assert.deepEqual(report.differing, []);
    assert.ok(report.rows >= 100, `${report.rows} rows`);
  });

  test('a master transaction holding ACCESS EXCLUSIVE on a table (replayed by the standby): the backup lets replay run until it ended, instead of waiting for ever on its row counts with replay paused', async () => {
    const m = pgServer(fx.cluster, 'PG001A');
    const client = new pg.Client({ host: m.host, port: m.port, user: 'postgres', database: 'shardkit' });
    await client.connect();
    let ended = false;
    try {
      await client.query('BEGIN');
      await client.query('LOCK TABLE db00001.pins IN ACCESS EXCLUSIVE MODE');
      const [at] = await m.sql<{ lsn: string }>('SELECT pg_current_wal_insert_lsn()::text AS lsn');
      // The lock's WAL record is not flushed (nor sent) while its transaction stays open: only a
      // background snapshot record (every 15 s, on some schedule) or a commit flushes it. A commit
      // of another session's xid flushes the WAL up to it, the lock's record included. Before, a
      // fresh-clone CI run under load waited 60 s for the standby and failed.
      await m.sql('SELECT txid_current()');
      await until('the standby replayed the lock', async () => (await pgServer(fx.cluster, 'PG001B').sql<{ ok: boolean }>('SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn AS ok', [at!.lsn]))[0]?.ok === true);
      const backup = cli(['backup', 'create', '--dir', fx.dir, '--to', to, '--json']);
      const holding = () => readdirSync(to).some((d) => existsSync(join(to, d, 'paused', 'PG001B')));
      const replaying = async () => (await pgServer(fx.cluster, 'PG001B').sql<{ s: string }>('SELECT pg_get_wal_replay_pause_state() AS s'))[0]?.s === 'not paused';
      await until('the backup started and waits with replay running', async () => holding() && (await replaying()));
      await client.query('ROLLBACK');
      ended = true;
      const r = await backup;
      assert.equal(r.code, 0, r.stderr);
      const v = await cli(['backup', 'verify', '--dir', fx.dir, '--from', to, '--id', (JSON.parse(r.stdout) as { id: string }).id, '--json']);
      assert.deepEqual((JSON.parse(v.stdout) as { differing: string[] }).differing, []);
    } finally {
      if (!ended) await client.query('ROLLBACK').catch(() => undefined);
      await client.end();
    }
  });

  test('a backup whose manifest holds the older md5 checksums still verifies (with md5), and a wrong one is found', async () => {
    const r = await cli(['backup', 'create', '--dir', fx.dir, '--to', to, '--json']);
    assert.equal(r.code, 0, r.stderr);
    const id = (JSON.parse(r.stdout) as { id: string }).id;
    const file = join(to, id, 'manifest.json');
    const m = JSON.parse(readFileSync(file, 'utf8')) as { units: Array<{ tables: Record<string, { rows: number; checksum: string }> }> };
    assert.ok(Object.values(m.units[0]!.tables).every((t) => t.checksum.startsWith('h:')), 'new backups sum hashtextextended');
    // Nothing writes: the master holds what the backup does.
    const md5 = await postgresTableSummaries(pgServer(fx.cluster, 'PG001A'), 'shardkit', { md5: true });
    m.units[0]!.tables = md5;
    writeFileSync(file, JSON.stringify(m));
    const v = await cli(['backup', 'verify', '--dir', fx.dir, '--from', to, '--id', id, '--json']);
    assert.equal(v.code, 0, v.stderr);
    assert.deepEqual((JSON.parse(v.stdout) as { differing: string[] }).differing, []);
    m.units[0]!.tables['db00000.pins']!.checksum = '12345';
    writeFileSync(file, JSON.stringify(m));
    const bad = await cli(['backup', 'verify', '--dir', fx.dir, '--from', to, '--id', id, '--json']);
    assert.equal(bad.code, 3, bad.stderr);
    assert.match(bad.stdout, /db00000\.pins/);
    rmSync(join(to, id), { recursive: true, force: true });
  });

  test('an idle fleet (no write after the copy): the backup verifies and restores; its WAL used to end at the position, and recovery to it failed', async () => {
    const r = await cli(['backup', 'create', '--dir', fx.dir, '--to', to, '--json']);
    assert.equal(r.code, 0, r.stderr);
    const id = (JSON.parse(r.stdout) as { id: string }).id;
    const v = await cli(['backup', 'verify', '--dir', fx.dir, '--from', to, '--id', id, '--json']);
    assert.equal(v.code, 0, v.stderr);
    assert.deepEqual((JSON.parse(v.stdout) as { differing: string[] }).differing, []);
    const restored = await cli(['backup', 'restore', '--dir', fx.dir, '--from', to, '--id', id]);
    assert.equal(restored.code, 0, restored.stderr);
  });

  test('a backup right after a full restore, no write in between: it restores, exactly the backup\'s rows; the rebuilt standby sat at a WAL segment start, where the copy held no WAL after its position and recovery to it failed', async () => {
    const master = pgServer(fx.cluster, 'PG001A');
    const standby = pgServer(fx.cluster, 'PG001B');
    // The previous test's restore left the standby there: it is rebuilt by pg_basebackup from the
    // promoted master, which ends that copy with a WAL switch. Switched again in case the master
    // logged a record since (its bgwriter's snapshot); a switch with nothing written since the last
    // one changes nothing and returns the current segment's start.
    await until('the standby replayed up to a WAL segment start, and the master wrote nothing since', async () => {
      const [m] = await master.sql<{ lsn: string }>('SELECT pg_switch_wal()::text AS lsn');
      const [s] = await standby.sql<{ lsn: string; start: boolean }>(
        "SELECT pg_last_wal_replay_lsn()::text AS lsn, (pg_last_wal_replay_lsn() - '0/0'::pg_lsn) % (SELECT setting::numeric FROM pg_settings WHERE name = 'wal_segment_size') = 0 AS start");
      return s?.start === true && s.lsn === m?.lsn;
    });
    const r = await cli(['backup', 'create', '--dir', fx.dir, '--to', to, '--json']);
    assert.equal(r.code, 0, r.stderr);
    const m = JSON.parse(r.stdout) as { id: string; units: Array<{ tables: Record<string, { rows: number; checksum: string }> }> };
    const restored = await cli(['backup', 'restore', '--dir', fx.dir, '--from', to, '--id', m.id]);
    assert.equal(restored.code, 0, restored.stderr);
    assert.deepEqual(await postgresTableSummaries(master, 'shardkit'), m.units[0]!.tables, 'the restored master holds exactly the backup\'s rows');
  });

  test('no id acknowledged before a restore is handed out again: the copy\'s sequences are set back to the live ones where those are higher', async () => {
    const r = await cli(['backup', 'create', '--dir', fx.dir, '--to', to, '--json']);
    assert.equal(r.code, 0, r.stderr);
    const id = (JSON.parse(r.stdout) as { id: string }).id;
    // More than the 32 values a sequence logs ahead (the copy may hold a value past its last id).
    const acked: bigint[] = [];
    let kit = await ShardKit.open({ configPath: fx.cluster.configPath, dataDir: fx.dir });
    try {
      for (let i = 0; i < 40; i++) acked.push((await kit.objects.create('pin', { i }, { shard: 2 })).id);
    } finally {
      await kit.close();
    }
    const restored = await cli(['backup', 'restore', '--dir', fx.dir, '--from', to, '--id', id]);
    assert.equal(restored.code, 0, restored.stderr);
    kit = await ShardKit.open({ configPath: fx.cluster.configPath, dataDir: fx.dir });
    try {
      assert.equal(await present(kit, acked), 0, 'the writes after the backup are undone');
      const o = await kit.objects.create('pin', { after: 'restore' }, { shard: 2 });
      assert.ok(!acked.includes(o.id), `the create after the restore got ${o.id}, an id acknowledged before it`);
      assert.ok(o.id > acked.at(-1)!, 'it goes on from the live sequence');
    } finally {
      await kit.close();
    }
  });
});
