import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ShardKit } from '../../src/kit/shard-kit.js';
import { archivedUntil } from '../../src/ops/backup/mariadb-binlog-archive.js';
import { assertBadInput, cli, ensureBuilt } from '../cli/cli-harness.js';
import { missingOn, newLedger, writeLoad } from '../failover/ledger.js';
import { startTestCluster } from '../mysql/cluster-fixture.js';
import { startArchiver, until } from './backup-helpers.js';

type Fixture = Awaited<ReturnType<typeof startTestCluster>>;

describe('shardkit backup archive and restore --to-time on a MariaDB dev cluster', () => {
  let fx: Fixture;
  let to: string;
  before(async () => {
    ensureBuilt();
    fx = await startTestCluster({ pairs: 1, shards: 4, prefix: 'shardkit-pitr-' });
    to = mkdtempSync(join(tmpdir(), 'shardkit-pitr-to-'));
  });
  after(async () => {
    rmSync(to, { recursive: true, force: true });
    await fx?.stop();
  });

  test('ledger: load, archive, a binlog rotation, backup --keep 1 (the file before it pruned), more load, T, more load; restore --to-time T: every write acknowledged before T is there, none sent after T', async (t) => {
    const archiver = startArchiver(fx.dir, to);
    // Killed whatever happens below: a leftover archiver would outlive the test.
    t.after(() => void archiver.child.kill('SIGKILL'));
    const kits = await Promise.all([0, 1].map(() => ShardKit.open({ configPath: fx.cluster.configPath, dataDir: fx.dir })));
    const ledger = newLedger();
    let release!: () => void;
    const load = writeLoad(kits, [0, 1, 2, 3], new Promise<void>((r) => (release = r)), 2, ledger);
    let T = 0;
    try {
      await until('writes before the backup', () => ledger.acked.length >= 50);
      // A second binlog file on the slave, so retention has a file no backup needs.
      await until('the archiver has the first binlog file', () => existsSync(join(to, 'archive', 'MySQL001A', 'mysql-bin.000001')));
      await fx.cluster.instance('MySQL001B').admin('FLUSH BINARY LOGS');
      const flushed = ledger.acked.length;
      await until('writes before the backup', () => ledger.acked.length >= flushed + 50);
      const b = await cli(['backup', 'create', '--dir', fx.dir, '--to', to, '--keep', '1', '--json']);
      assert.equal(b.code, 0, b.stderr);
      const removedLogs = (JSON.parse(b.stdout) as { retention: { removedLogs: string[] } }).retention.removedLogs;
      assert.deepEqual(removedLogs, ['MySQL001A/mysql-bin.000001'], 'retention removes the archived binlog file wholly before the backup');
      const backupEnded = Date.now();
      await until('writes after the backup', () => ledger.acked.filter((a) => a.sentAt! > backupEnded).length >= 50);
      // T on a whole second: the binlog stamps events in seconds (docs/backups.md).
      T = Math.ceil(Date.now() / 1000) * 1000;
      await until('writes sent after T', () => ledger.acked.filter((a) => a.sentAt! > T).length >= 50);
    } finally {
      release();
      await load;
      await Promise.all(kits.map((k) => k.close()));
    }
    await fx.cluster.waitForReplication();
    await until('the archive holds the events after T', async () => ((await archivedUntil(join(to, 'archive', 'MySQL001A'))) ?? 0) >= T);
    archiver.child.kill('SIGTERM');
    assert.equal(await archiver.exit, 0, archiver.stderr());

    const beforeT = ledger.acked.filter((a) => a.at < T);
    const afterT = ledger.acked.filter((a) => a.sentAt! >= T);
    const r = await cli(['backup', 'restore', '--dir', fx.dir, '--from', to, '--to-time', new Date(T).toISOString(), '--json']);
    assert.equal(r.code, 0, r.stderr);
    await fx.cluster.waitForReplication();
    for (const host of ['MySQL001A', 'MySQL001B']) {
      assert.deepEqual(await missingOn(fx.cluster, host, beforeT), [], `every write acknowledged before T is on ${host}`);
      assert.equal(afterT.length - (await missingOn(fx.cluster, host, afterT)).length, 0, `no write sent after T is on ${host}`);
    }
  });

  test('bad input: a time before the first backup, after the archive, or not a time: a clear error, nothing changed', async () => {
    const count = async () => Number(((await fx.cluster.instance('MySQL001A').admin<Array<{ n: number }>>('SELECT COUNT(*) AS n FROM db00000.pins'))[0])!.n);
    const n = await count();
    assertBadInput(await cli(['backup', 'restore', '--dir', fx.dir, '--from', to, '--to-time', '2001-01-01T00:00:00Z']), 'before the first backup', /INVALID_ARGUMENT: no backup .* was taken before 2001-01-01T00:00:00.000Z/);
    assertBadInput(await cli(['backup', 'restore', '--dir', fx.dir, '--from', to, '--to-time', String(Date.now() + 3_600_000)]), 'after the archive', /INVALID_ARGUMENT: the archived log of MySQL001A ends at .*: nothing changed/);
    assertBadInput(await cli(['backup', 'restore', '--dir', fx.dir, '--from', to, '--to-time', 'yesterday']), 'not a time', /INVALID_ARGUMENT: --to-time must be an ISO time/);
    assert.equal(await count(), n, 'nothing changed');
  });
});
