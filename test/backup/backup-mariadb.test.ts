import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pinterestId } from '../../src/ids/pinterest-id.js';
import { ShardKit } from '../../src/kit/shard-kit.js';
import { spawn } from 'node:child_process';
import { CLI, cli, ensureBuilt } from '../cli/cli-harness.js';
import { missingOn, newLedger, writeLoad } from '../failover/ledger.js';
import { startTestCluster } from '../mysql/cluster-fixture.js';
import { until } from './backup-helpers.js';

type Fixture = Awaited<ReturnType<typeof startTestCluster>>;

const SHARDS = [0, 1, 2, 3, 4, 5, 6, 7];

describe('shardkit backup on a MariaDB dev cluster', () => {
  let fx: Fixture;
  let to: string;
  before(async () => {
    fx = await startTestCluster({ pairs: 2, shards: 8, prefix: 'shardkit-bk-' });
    to = mkdtempSync(join(tmpdir(), 'shardkit-bk-to-'));
  });
  after(async () => {
    rmSync(to, { recursive: true, force: true });
    await fx?.stop();
  });

  test('ledger: writes through two services, a backup, more writes; restore: every write acknowledged before the backup is back, none acknowledged after it, and no acknowledged id is handed out again', async () => {
    const kits = await Promise.all([0, 1].map(() => ShardKit.open({ configPath: fx.cluster.configPath, dataDir: fx.dir })));
    const ledger = newLedger();
    let release!: () => void;
    const load = writeLoad(kits, SHARDS, new Promise<void>((r) => (release = r)), 2, ledger);
    let backupStarted = 0;
    let backupEnded = 0;
    try {
      // Acknowledged in an earlier millisecond than the one the backup starts in (at < backupStarted).
      await until('writes before the backup', () => {
        const now = Date.now();
        return ledger.acked.filter((a) => a.at < now).length >= 100;
      });
      backupStarted = Date.now();
      const r = await cli(['backup', 'create', '--dir', fx.dir, '--to', to, '--json']);
      backupEnded = Date.now();
      assert.equal(r.code, 0, r.stderr);
      const m = JSON.parse(r.stdout) as { units: Array<{ unit: string; source: string; position: string }> };
      assert.deepEqual(m.units.map((u) => [u.unit, u.source]), [['MySQL001A', 'MySQL001B'], ['MySQL002A', 'MySQL002B']], 'each pair copied from its slave');
      for (const u of m.units) assert.match(u.position, /^\d+-\d+-\d+/, 'a GTID position in the manifest');
      await until('writes after the backup', () => ledger.acked.filter((a) => a.sentAt! > backupEnded).length >= 50);
    } finally {
      release();
      await load;
    }
    const before = ledger.acked.filter((a) => a.at < backupStarted);
    const afterwards = ledger.acked.filter((a) => a.sentAt! > backupEnded);
    assert.ok(before.length >= 100 && afterwards.length >= 50);

    // A connected service: refused, nothing changed.
    const refused = await cli(['backup', 'restore', '--dir', fx.dir, '--from', to]);
    assert.equal(refused.code, 2, refused.stderr);
    assert.match(refused.stderr, /PRECONDITION_FAILED: .*connection.*stop the services first/);
    assert.deepEqual(await missingOnPair(fx, 'MySQL001A', afterwards), [], 'nothing changed by the refused restore');
    await Promise.all(kits.map((k) => k.close()));

    const r = await cli(['backup', 'restore', '--dir', fx.dir, '--from', to, '--json']);
    assert.equal(r.code, 0, r.stderr);
    await fx.cluster.waitForReplication();
    for (const host of ['MySQL001A', 'MySQL001B', 'MySQL002A', 'MySQL002B']) {
      assert.deepEqual(await missingOnPair(fx, host, before), [], `every write acknowledged before the backup is on ${host}`);
      const later = onPair(fx, host, afterwards);
      assert.ok(later.length > 0);
      assert.equal(later.length - (await missingOn(fx.cluster, host, later)).length, 0, `no write sent after the backup is on ${host}`);
    }

    // The dump's CREATE TABLE carries the backup's AUTO_INCREMENT: the live counters are kept.
    const kit = await ShardKit.open({ configPath: fx.cluster.configPath, dataDir: fx.dir });
    try {
      const acked = new Set(ledger.acked.map((a) => a.id));
      for (const shard of SHARDS) {
        const { id } = await kit.objects.create('pin', { after: 'restore' }, { shard });
        assert.ok(!acked.has(id), `a create on shard ${shard} after the restore got ${id}, an id acknowledged before it`);
      }
    } finally {
      await kit.close();
    }
  });

  test('backup list shows the backup; verify restores it into a scratch server and matches the manifest; a wrong manifest is caught', async () => {
    const list = await cli(['backup', 'list', '--from', to, '--json']);
    assert.equal(list.code, 0, list.stderr);
    const { backups } = JSON.parse(list.stdout) as { backups: Array<{ id: string; complete: boolean; units: number }> };
    assert.equal(backups.length, 1);
    assert.equal(backups[0]!.complete, true);
    const ok = await cli(['backup', 'verify', '--dir', fx.dir, '--from', to, '--json']);
    assert.equal(ok.code, 0, ok.stderr);
    const report = JSON.parse(ok.stdout) as { differing: string[]; rows: number };
    assert.deepEqual(report.differing, []);
    assert.ok(report.rows >= 150, `${report.rows} rows restored`);

    const file = join(to, backups[0]!.id, 'manifest.json');
    const text = readFileSync(file, 'utf8');
    const m = JSON.parse(text) as { units: Array<{ tables: Record<string, { rows: number }> }> };
    m.units[0]!.tables['db00000.pins']!.rows += 1;
    writeFileSync(file, JSON.stringify(m));
    try {
      const bad = await cli(['backup', 'verify', '--dir', fx.dir, '--from', to]);
      assert.equal(bad.code, 3, bad.stderr);
      assert.match(bad.stdout, /db00000\.pins: \d+ rows.*the manifest says \d+ rows/);
    } finally {
      writeFileSync(file, text);
    }
  });

  test('kill -9 of the backup process while it reads a slave: no manifest; the next run restarts the slave\'s applier, resumes and completes', async () => {
    ensureBuilt();
    const target = mkdtempSync(join(tmpdir(), 'shardkit-bk-kill-'));
    const slave = fx.cluster.instance('MySQL001B');
    // A table lock on the slave holds the backup inside its copy of MySQL001B (applier stopped).
    const holder = await slave.connect();
    try {
      await holder.query('LOCK TABLES db00000.pins WRITE');
      const child = spawn(process.execPath, [CLI, 'backup', 'create', '--dir', fx.dir, '--to', target], { stdio: 'ignore' });
      const exited = new Promise((r) => child.on('exit', r));
      await until('the backup stopped the applier of MySQL001B', () => existsSync(target) && readdirIds(target).some((id) => existsSync(join(target, id, 'stopped', 'MySQL001B'))));
      const sqlRunning = async () => String(((await slave.admin<Array<Record<string, unknown>>>('SHOW SLAVE STATUS'))[0] ?? {}).Slave_SQL_Running);
      const deadline = Date.now() + 60_000;
      while ((await sqlRunning()) !== 'No') {
        if (Date.now() > deadline) throw new Error('the applier did not stop');
        await sleep(20);
      }
      child.kill('SIGKILL');
      await exited;
      await holder.query('UNLOCK TABLES');
      const listed = await cli(['backup', 'list', '--from', target, '--json']);
      const { backups } = JSON.parse(listed.stdout) as { backups: Array<{ id: string; complete: boolean }> };
      assert.equal(backups.length, 1);
      assert.equal(backups[0]!.complete, false, 'no manifest for the killed backup');
      assert.equal(existsSync(join(target, backups[0]!.id, 'manifest.json')), false);
      assert.equal(await sqlRunning(), 'No', 'the killed run left the applier stopped');

      const again = await cli(['backup', 'create', '--dir', fx.dir, '--to', target, '--json']);
      assert.equal(again.code, 0, again.stderr);
      assert.match(again.stderr, new RegExp(`resuming backup ${backups[0]!.id}`));
      assert.equal((JSON.parse(again.stdout) as { id: string }).id, backups[0]!.id);
      assert.equal(await sqlRunning(), 'Yes', 'the applier runs again');
      const ok = await cli(['backup', 'verify', '--dir', fx.dir, '--from', target, '--json']);
      assert.equal(ok.code, 0, ok.stdout + ok.stderr);
    } finally {
      await holder.query('UNLOCK TABLES').catch(() => undefined);
      await holder.end();
      rmSync(target, { recursive: true, force: true });
    }
  });
});

/** The pins of `acked` on the shards `host` holds that it does not have. */
async function missingOnPair(fx: Fixture, host: string, acked: Array<{ id: bigint }>): Promise<bigint[]> {
  return missingOn(fx.cluster, host, onPair(fx, host, acked));
}

/** The pins of `acked` on the shards of `host`'s pair. */
function onPair(fx: Fixture, host: string, acked: Array<{ id: bigint }>): Array<{ id: bigint }> {
  const pair = host.slice(0, 'MySQL001'.length);
  const json = JSON.parse(readFileSync(fx.cluster.configPath, 'utf8')) as { shardMap: { ranges: Array<{ range: [number, number]; master: string }> } };
  const ranges = json.shardMap.ranges.filter((r) => r.master.startsWith(pair));
  const mine = acked.filter((a) => ranges.some((r) => {
    const s = pinterestId.decode(a.id).shard;
    return s >= r.range[0] && s <= r.range[1];
  }));
  return mine;
}

const readdirIds = (dir: string): string[] => readdirSync(dir).filter((n) => /^\d{8}T/.test(n));
