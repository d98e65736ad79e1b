import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ShardKit } from '../../src/kit/shard-kit.js';
import { archivedSegments, archivedWalUntil } from '../../src/ops/backup/postgres-wal-archive.js';
import { pgServer } from '../../src/ops/dev/dev-postgres.js';
import { assertBadInput, cli, ensureBuilt } from '../cli/cli-harness.js';
import { newLedger, writeLoad } from '../failover/ledger.js';
import { startTestCluster } from '../mysql/cluster-fixture.js';
import { present, startArchiver, until } from './backup-helpers.js';

type Fixture = Awaited<ReturnType<typeof startTestCluster>>;

describe('shardkit backup archive (pg_receivewal from the standby) and restore --to-time on a PostgreSQL dev cluster', () => {
  let fx: Fixture;
  let to: string;
  before(async () => {
    ensureBuilt();
    fx = await startTestCluster({ engine: 'postgres', pairs: 1, shards: 4, prefix: 'shardkit-pitr-pg-' });
    to = mkdtempSync(join(tmpdir(), 'shardkit-pitr-pg-to-'));
  });
  after(async () => {
    rmSync(to, { recursive: true, force: true });
    await fx?.stop();
  });

  test('ledger: archive, load, a WAL switch, backup --keep 1 (the segment before it pruned), more load, T, more load; restore --to-time T: every write acknowledged before T is back, none sent at or after T', async (t) => {
    const archiver = startArchiver(fx.dir, to);
    const archive = join(to, 'archive', 'PG001A');
    // Killed whatever happens below: a leftover archiver would outlive the test.
    t.after(() => void archiver.child.kill('SIGKILL'));
    await until('pg_receivewal opened its first segment', () => existsSync(archive) && readdirSync(archive).length > 0);
    const kits = await Promise.all([0, 1].map(() => ShardKit.open({ configPath: fx.cluster.configPath, dataDir: fx.dir })));
    const ledger = newLedger();
    let release!: () => void;
    const load = writeLoad(kits, [0, 1, 2, 3], new Promise<void>((r) => (release = r)), 2, ledger);
    let T = 0;
    try {
      await until('writes before the backup', () => ledger.acked.length >= 50);
      // A new WAL segment before the backup, so retention has one no backup needs.
      const first = archivedSegments(archive)[0]!.name;
      await pgServer(fx.cluster, 'PG001A').sql('SELECT pg_switch_wal()');
      const switched = ledger.acked.length;
      await until('writes before the backup', () => ledger.acked.length >= switched + 50);
      const b = await cli(['backup', 'create', '--dir', fx.dir, '--to', to, '--keep', '1', '--json']);
      assert.equal(b.code, 0, b.stderr);
      const removedLogs = (JSON.parse(b.stdout) as { retention: { removedLogs: string[] } }).retention.removedLogs;
      assert.ok(removedLogs.includes(`PG001A/${first}`), `retention removes the archived segment wholly before the backup: ${removedLogs.join(', ')}`);
      const backupEnded = Date.now();
      await until('writes after the backup', () => ledger.acked.filter((a) => a.sentAt! > backupEnded).length >= 50);
      T = Date.now();
      await until('writes sent after T', () => ledger.acked.filter((a) => a.sentAt! > T).length >= 50);
    } finally {
      release();
      await load;
      await Promise.all(kits.map((k) => k.close()));
    }
    await until('the archive holds a commit after T', async () => ((await archivedWalUntil(archive)) ?? 0) >= T);
    archiver.child.kill('SIGTERM');
    assert.equal(await archiver.exit, 0, archiver.stderr());

    const beforeT = ledger.acked.filter((a) => a.at < T).map((a) => a.id);
    const afterT = ledger.acked.filter((a) => a.sentAt! >= T).map((a) => a.id);
    const r = await cli(['backup', 'restore', '--dir', fx.dir, '--from', to, '--to-time', new Date(T).toISOString(), '--json']);
    assert.equal(r.code, 0, r.stderr);
    const kit = await ShardKit.open({ configPath: fx.cluster.configPath, dataDir: fx.dir });
    try {
      assert.equal(await present(kit, beforeT), beforeT.length, 'every write acknowledged before T is back');
      assert.equal(await present(kit, afterT), 0, 'no write sent at or after T is there');
      const o = await kit.objects.create('pin', { after: 'restore' }, { shard: 2 });
      assert.equal((await kit.objects.get(o.id)).id, o.id, 'the restored master takes writes');
    } finally {
      await kit.close();
    }
  });

  test('bad input: a time before the first backup, after the archive, or not a time: a clear error, nothing changed', async () => {
    const kit = await ShardKit.open({ configPath: fx.cluster.configPath, dataDir: fx.dir });
    const o = await kit.objects.create('pin', { marker: true }, { shard: 1 });
    await kit.close();
    assertBadInput(await cli(['backup', 'restore', '--dir', fx.dir, '--from', to, '--to-time', '2001-01-01T00:00:00Z']), 'before the first backup', /INVALID_ARGUMENT: no backup .* was taken before 2001-01-01T00:00:00.000Z/);
    assertBadInput(await cli(['backup', 'restore', '--dir', fx.dir, '--from', to, '--to-time', String(Date.now() + 3_600_000)]), 'after the archive', /INVALID_ARGUMENT: the archived log of PG001A ends at .*: nothing changed/);
    assertBadInput(await cli(['backup', 'restore', '--dir', fx.dir, '--from', to, '--to-time', 'yesterday']), 'not a time', /INVALID_ARGUMENT: --to-time must be an ISO time/);
    const again = await ShardKit.open({ configPath: fx.cluster.configPath, dataDir: fx.dir });
    try {
      assert.equal(await present(again, [o.id]), 1, 'nothing changed');
    } finally {
      await again.close();
    }
  });
});
