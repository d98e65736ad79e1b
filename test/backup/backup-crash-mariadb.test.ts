import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { isShardKitError } from '../../src/errors.js';
import { ShardKit } from '../../src/kit/shard-kit.js';
import { createBackup, DirectoryTarget, openBackupEngine } from '../../src/ops/backup/index.js';
import { archivedUntil } from '../../src/ops/backup/mariadb-binlog-archive.js';
import { devUp } from '../../src/ops/dev-cluster.js';
import { processRunning } from '../../src/ops/proc-stat.js';
import { cli, ensureBuilt } from '../cli/cli-harness.js';
import { missingOn, newLedger, writeLoad } from '../failover/ledger.js';
import { startTestCluster } from '../mysql/cluster-fixture.js';
import { startArchiver, until } from './backup-helpers.js';

type Fixture = Awaited<ReturnType<typeof startTestCluster>>;

/** A directory target that runs `onDump` when the first bytes of a pair's dump arrive, holding the dump back meanwhile. */
class DumpHookTarget extends DirectoryTarget {
  constructor(dir: string, private readonly onDump: () => Promise<void>) {
    super(dir);
  }

  override put(name: string, source: Readable | Buffer | string): Promise<number> {
    if (!name.endsWith('.sql.gz') || !(source instanceof Readable)) return super.put(name, source);
    let fired = false;
    const hook = new Transform({
      transform: (chunk, _enc, done) => {
        if (fired) return done(null, chunk);
        fired = true;
        this.onDump().then(() => done(null, chunk), done);
      },
    });
    source.on('error', (err) => hook.destroy(err));
    return super.put(name, source.pipe(hook));
  }
}

const streamerPid = (to: string) => Number(readFileSync(join(to, 'archive', 'MySQL001A', 'streamer.pid'), 'utf8'));

describe('backup crashes on a MariaDB dev cluster: the slave killed mid-copy, the archiver killed', () => {
  let fx: Fixture;
  let to: string;
  const children: ChildProcess[] = [];
  before(async () => {
    ensureBuilt();
    fx = await startTestCluster({ pairs: 1, shards: 4, prefix: 'shardkit-bk-crash-' });
    to = mkdtempSync(join(tmpdir(), 'shardkit-bk-crash-to-'));
  });
  after(async () => {
    for (const c of children) c.kill('SIGKILL');
    rmSync(to, { recursive: true, force: true });
    await fx?.stop();
  });

  test('kill -9 of the slave while its dump streams: create fails naming it, the backup stays INCOMPLETE; once the slave is back the next create completes and verifies, and the slave replicates', async () => {
    // ~25 MB of dump, more than every buffer between the server and the file: the kill lands mid-dump.
    const master = fx.cluster.instance('MySQL001A');
    await master.admin('CREATE TABLE db00000.bk_filler (id INT PRIMARY KEY, pad VARCHAR(255))');
    await master.admin("INSERT INTO db00000.bk_filler SELECT seq, REPEAT('x', 250) FROM db00000.seq_1_to_100000");
    await fx.cluster.waitForReplication();
    const engine = await openBackupEngine({ dir: fx.dir });
    try {
      const target = new DumpHookTarget(to, () => fx.cluster.instance('MySQL001B').kill());
      await assert.rejects(createBackup(engine, target), (err: Error) => {
        assert.ok(isShardKitError(err, 'SHARD_UNAVAILABLE'), String(err));
        assert.match(err.message, /copying MySQL001A from MySQL001B failed .*incomplete \(no manifest\).*once MySQL001B is back: it resumes/);
        return true;
      });
    } finally {
      await engine.close();
    }
    const listed = await cli(['backup', 'list', '--from', to, '--json']);
    const backups = (JSON.parse(listed.stdout) as { backups: Array<{ id: string; complete: boolean }> }).backups;
    assert.deepEqual(backups.map((b) => b.complete), [false], 'listed, as incomplete');
    assert.deepEqual(readdirSync(join(to, backups[0]!.id)).filter((n) => n.endsWith('.sql.gz')), [], 'no dump object: only its .partial');

    await devUp({ dir: fx.dir, skipInit: true });
    const again = await cli(['backup', 'create', '--dir', fx.dir, '--to', to, '--json']);
    assert.equal(again.code, 0, again.stderr);
    const listedAfter = await cli(['backup', 'list', '--from', to, '--json']);
    assert.deepEqual((JSON.parse(listedAfter.stdout) as { backups: Array<{ complete: boolean }> }).backups.map((b) => b.complete), [true], 'the incomplete one resumed or removed');
    const v = await cli(['backup', 'verify', '--dir', fx.dir, '--from', to, '--json']);
    assert.equal(v.code, 0, v.stderr);
    assert.deepEqual((JSON.parse(v.stdout) as { differing: string[] }).differing, []);
    await master.admin('INSERT INTO db00000.bk_filler VALUES (0, "after")');
    await fx.cluster.waitForReplication();
    const [row] = await fx.cluster.instance('MySQL001B').admin<Array<{ n: number }>>('SELECT COUNT(*) AS n FROM db00000.bk_filler');
    assert.equal(Number(row!.n), 100_001, 'the slave applies again');
  });

  test('kill -9 of the archiver (its tool left running), then of archiver and tool together, while writes go on: each restart resumes, and restore --to-time T holds exactly the writes acknowledged before T', async () => {
    const first = startArchiver(fx.dir, to);
    children.push(first.child);
    await until('the first binlog archived', () => existsSync(join(to, 'archive', 'MySQL001A', 'streamer.pid')));
    const b = await cli(['backup', 'create', '--dir', fx.dir, '--to', to]);
    assert.equal(b.code, 0, b.stderr);
    const kits = await Promise.all([0, 1].map(() => ShardKit.open({ configPath: fx.cluster.configPath, dataDir: fx.dir })));
    const ledger = newLedger();
    let release!: () => void;
    const load = writeLoad(kits, [0, 1, 2, 3], new Promise<void>((r) => (release = r)), 2, ledger);
    let T = 0;
    let last: ReturnType<typeof startArchiver>;
    try {
      const acked = () => ledger.acked.length;
      let n = acked();
      await until('writes', () => acked() >= n + 50);
      const orphan = streamerPid(to);
      first.child.kill('SIGKILL');
      await first.exit;
      assert.ok(processRunning(orphan), 'mariadb-binlog outlives its killed archiver');
      n = acked();
      await until('writes', () => acked() >= n + 50);
      const second = startArchiver(fx.dir, to);
      children.push(second.child);
      await until('the second archiver ended the leftover tool', () => second.stderr().includes(`ended mariadb-binlog ${orphan} left by a killed archiver`));
      await until('the second archiver streams', () => streamerPid(to) !== orphan);
      n = acked();
      await until('writes', () => acked() >= n + 50);
      // The whole group killed: nothing archives while writes go on.
      const tool = streamerPid(to);
      second.child.kill('SIGKILL');
      process.kill(tool, 'SIGKILL');
      await second.exit;
      n = acked();
      await until('writes while nothing archives', () => acked() >= n + 50);
      last = startArchiver(fx.dir, to);
      children.push(last.child);
      n = acked();
      await until('writes', () => acked() >= n + 50);
      T = Math.ceil(Date.now() / 1000) * 1000;
      await until('writes sent after T', () => ledger.acked.filter((a) => a.sentAt! > T).length >= 50);
    } finally {
      release();
      await load;
      await Promise.all(kits.map((k) => k.close()));
    }
    await fx.cluster.waitForReplication();
    await until('the archive holds the events after T', async () => ((await archivedUntil(join(to, 'archive', 'MySQL001A'))) ?? 0) >= T);
    last!.child.kill('SIGTERM');
    assert.equal(await last!.exit, 0, last!.stderr());

    const beforeT = ledger.acked.filter((a) => a.at < T);
    const afterT = ledger.acked.filter((a) => a.sentAt! >= T);
    const r = await cli(['backup', 'restore', '--dir', fx.dir, '--from', to, '--to-time', new Date(T).toISOString()]);
    assert.equal(r.code, 0, r.stderr);
    await fx.cluster.waitForReplication();
    assert.deepEqual(await missingOn(fx.cluster, 'MySQL001A', beforeT), [], 'every write acknowledged before T is back: no gap in the archive');
    assert.equal(afterT.length - (await missingOn(fx.cluster, 'MySQL001A', afterT)).length, 0, 'no write sent after T is there');
  });
});
