import { spawn } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pinterestId } from '../../src/ids/pinterest-id.js';
import { ShardKit } from '../../src/kit/shard-kit.js';
import { archivedUntil } from '../../src/ops/backup/mariadb-binlog-archive.js';
import { archivedWalUntil } from '../../src/ops/backup/postgres-wal-archive.js';
import { pgServer } from '../../src/ops/dev/dev-postgres.js';
import { DevCluster } from '../../src/ops/dev-cluster.js';
import { assertBadInput, cli, CLI, ensureBuilt } from '../cli/cli-harness.js';
import { newLedger, writeLoad, type Ledger } from '../failover/ledger.js';
import { startTestCluster } from '../mysql/cluster-fixture.js';
import { present, startArchiver, until } from './backup-helpers.js';

type Fixture = Awaited<ReturnType<typeof startTestCluster>>;
type Engine = 'mariadb' | 'postgres';

const RESTORED = 2;
const OTHERS = [0, 1, 3];
const shardOf = (id: bigint) => pinterestId.decode(id).shard;

/**
 * `backup restore --shards N --to-time T --into SPARE` on a live fleet (issue 32 item 3): shard 2
 * restored to T aside on a spare pair and switched in while services keep writing to the other
 * shards; a ledger shows shard 2 as of T, every other acknowledged write kept, ids never reused.
 */
for (const engine of ['mariadb', 'postgres'] as Engine[]) {
  describe(`backup restore --shards --into on a ${engine} dev cluster, services running`, () => {
    let fx: Fixture;
    let to: string;
    // Test 1's backup and its writes to shard 0, for the restore in place (last test).
    let backupStarted = 0;
    let backupEnded = 0;
    let shard0: Ledger['acked'] = [];
    const first = engine === 'mariadb' ? 'MySQL001A' : 'PG001A';
    const spare = engine === 'mariadb' ? ['MySQL002A', 'MySQL002B'] : ['PG002A', 'PG002B'];
    before(async () => {
      ensureBuilt();
      fx = await startTestCluster({ engine, pairs: 1, shards: 4, prefix: `shardkit-into-${engine}-` });
      to = mkdtempSync(join(tmpdir(), `shardkit-into-${engine}-to-`));
    });
    after(async () => {
      rmSync(to, { recursive: true, force: true });
      await fx?.stop();
    });

    test('shard 2 restored to T while two services write to shards 0, 1, 3: shard 2 reads as of T, every other acknowledged write is there, new ids pass every id handed out', async (t) => {
      const archiver = startArchiver(fx.dir, to);
      t.after(() => void archiver.child.kill('SIGKILL'));
      const archive = join(to, 'archive', first);
      if (engine === 'postgres') await until('pg_receivewal opened its first segment', () => existsSync(archive) && readdirSync(archive).length > 0);
      const kits = await Promise.all([0, 1].map(() => ShardKit.open({ configPath: fx.cluster.configPath, dataDir: fx.dir })));
      // The other shards are written from start to end, through the restore; shard 2 until after T.
      const others = newLedger();
      let stopOthers!: () => void;
      const othersLoad = writeLoad(kits, OTHERS, new Promise<void>((r) => (stopOthers = r)), 1, others);
      const restored: Ledger = newLedger();
      let T = 0;
      try {
        let stopRestored!: () => void;
        const restoredLoad = writeLoad(kits, [RESTORED], new Promise<void>((r) => (stopRestored = r)), 1, restored);
        try {
          await until('writes to shard 2 before the backup', () => restored.acked.length >= 30);
          if (engine === 'mariadb') await until('the archiver has a binlog file', () => existsSync(archive) && readdirSync(archive).length > 0);
          backupStarted = Date.now();
          const b = await cli(['backup', 'create', '--dir', fx.dir, '--to', to, '--json']);
          assert.equal(b.code, 0, b.stderr);
          backupEnded = Date.now();
          await until('writes to shard 2 after the backup', () => restored.acked.filter((a) => a.sentAt! > backupEnded).length >= 30);
          // MariaDB's binlog stamps events in whole seconds (docs/backups.md): T on a second.
          T = engine === 'mariadb' ? Math.ceil(Date.now() / 1000) * 1000 : Date.now();
          await until('writes to shard 2 sent after T', () => restored.acked.filter((a) => a.sentAt! > T).length >= 30);
        } finally {
          stopRestored();
          await restoredLoad;
        }
        await until('the archive reaches past T', async () => ((engine === 'mariadb' ? await archivedUntil(archive) : await archivedWalUntil(archive)) ?? 0) >= T);

        const added = await cli(['dev', 'add-pair', '--dir', fx.dir, '--json']);
        assert.equal(added.code, 0, added.stderr);
        const before = others.acked.length;
        const r = await cli(['backup', 'restore', '--dir', fx.dir, '--from', to, '--shards', String(RESTORED), '--to-time', new Date(T).toISOString(), '--into', spare[0]!, '--into-slave', spare[1]!, '--json']);
        assert.equal(r.code, 0, r.stderr + r.stdout.slice(-2000));
        const lines = r.stdout.trim().split('\n').map((l) => JSON.parse(l) as { event: string; outcome?: string; phase?: string; verifiedTables?: number });
        assert.equal(lines.at(-1)!.outcome, 'switched', r.stdout.slice(-1000));
        assert.ok(lines.at(-1)!.verifiedTables! > 0, 'the spare was verified against what the restore produced');
        assert.deepEqual([...new Set(lines.filter((l) => l.event === 'phase').map((l) => l.phase))], ['started', 'copied', 'frozen', 'fenced', 'switched'], 'the move machinery\'s phases, each recorded');
        // The running services adopt the switch without a restart: shard 2 takes writes on the spare, with new ids.
        await until('the other shards are written after the restore', () => others.acked.length >= before + 30);
        const fresh = await kits[0]!.objects.create('pin', { after: 'the restore' }, { shard: RESTORED });
        assert.equal((await kits[1]!.shardMap()).locate(RESTORED).master, spare[0]);
        const handedOut = restored.acked.map((a) => pinterestId.decode(a.id).localId);
        assert.ok(handedOut.every((l) => pinterestId.decode(fresh.id).localId > l), 'an id made after the restore passes every id the live shard handed out (after T included)');
      } finally {
        stopOthers();
        await othersLoad;
        await Promise.all(kits.map((k) => k.close()));
        archiver.child.kill('SIGTERM');
      }

      const kit = await ShardKit.open({ configPath: fx.cluster.configPath, dataDir: fx.dir });
      try {
        const beforeT = restored.acked.filter((a) => a.at < T).map((a) => a.id);
        const afterT = restored.acked.filter((a) => a.sentAt! >= T).map((a) => a.id);
        assert.ok(beforeT.length >= 30 && afterT.length >= 30);
        assert.equal(await present(kit, beforeT), beforeT.length, 'shard 2: every write acknowledged before T is back');
        assert.equal(await present(kit, afterT), 0, 'shard 2: no write sent at or after T is there');
        shard0 = others.acked.filter((a) => shardOf(a.id) === 0);
        const kept = others.acked.map((a) => a.id);
        assert.ok(kept.every((id) => OTHERS.includes(shardOf(id))));
        assert.equal(await present(kit, kept), kept.length, `the other shards: all ${kept.length} acknowledged writes are there (0 lost)`);
      } finally {
        await kit.close();
      }
      const verified = await cli(['shards', 'verify', `0..3`, '--json', '--dir', fx.dir]);
      assert.equal(verified.code, 0, verified.stdout + verified.stderr);
      assert.deepEqual((JSON.parse(verified.stdout) as { mismatches: unknown[] }).mismatches, [], 'each shard\'s master and slave agree, the restored one\'s on the spare pair');
    });

    test('bad input: a spare holding rows of the shard, an unknown shard, shards on two pairs, the serving pair, an unknown host, a time outside the archive, --into without --shards: a clear error, nothing changed', async () => {
      // A stray row of shard 3 on the spare (which serves shard 2 now).
      const cluster = DevCluster.require(fx.dir);
      if (engine === 'mariadb') {
        await cluster.instance(spare[0]!).admin('CREATE DATABASE IF NOT EXISTS db00003');
        await cluster.instance(spare[0]!).admin('CREATE TABLE db00003.pins LIKE db00002.pins');
        await cluster.instance(spare[0]!).admin('INSERT INTO db00003.pins SELECT * FROM db00002.pins LIMIT 1');
      } else {
        await pgServer(cluster, spare[0]!).sql('CREATE SCHEMA IF NOT EXISTS db00003; CREATE TABLE db00003.pins (LIKE db00002.pins); INSERT INTO db00003.pins SELECT * FROM db00002.pins LIMIT 1', [], 'shardkit');
      }
      const kit = await ShardKit.open({ configPath: fx.cluster.configPath, dataDir: fx.dir });
      const o = await kit.objects.create('pin', { marker: true }, { shard: 3 });
      const version = (await kit.refreshShardMap()).version;
      await kit.close();
      const restore = (...args: string[]) => cli(['backup', 'restore', '--dir', fx.dir, '--from', to, ...args]);
      const held = await restore('--shards', '3', '--into', spare[0]!, '--into-slave', spare[1]!);
      assert.notEqual(held.code, 0);
      assert.match(held.stderr, /ALREADY_EXISTS: .*db00003\.pins on the target .* already holds rows/);
      // The refusal is all it did: the abort behind it dropped nothing of what it found on the spare.
      const stray = engine === 'mariadb'
        ? (await cluster.instance(spare[0]!).admin<Array<{ n: number | string }>>("SELECT COUNT(*) AS n FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'db00003' AND TABLE_NAME = 'pins'"))[0]!.n
        : (await pgServer(cluster, spare[0]!).sql<{ n: string }>("SELECT count(*)::text AS n FROM pg_tables WHERE schemaname = 'db00003' AND tablename = 'pins'", [], 'shardkit'))[0]!.n;
      assert.equal(Number(stray), 1, 'the spare keeps its own table of shard 3');
      const strayRows = engine === 'mariadb'
        ? (await cluster.instance(spare[0]!).admin<Array<{ n: number | string }>>('SELECT COUNT(*) AS n FROM db00003.pins'))[0]!.n
        : (await pgServer(cluster, spare[0]!).sql<{ n: string }>('SELECT count(*)::text AS n FROM db00003.pins', [], 'shardkit'))[0]!.n;
      assert.equal(Number(strayRows), 1, 'the spare keeps its own row of shard 3');
      assert.equal(held.stderr.trim().split('\n').at(-1)!.includes('at '), false, held.stderr);
      assertBadInput(await restore('--shards', '99', '--into', spare[0]!), 'an unknown shard', /UNKNOWN_SHARD: shards 99\.\.99 are not all in the shard map/);
      assertBadInput(await restore('--shards', '1..2', '--into', spare[0]!), 'shards on two pairs', /INVALID_ARGUMENT: shards 1\.\.2 are not all on one pair/);
      assertBadInput(await restore('--shards', '2', '--into', spare[0]!), 'the serving pair', /INVALID_ARGUMENT: --into .* is a host of the pair that serves shards 2\.\.2 now/);
      assertBadInput(await restore('--shards', '1', '--into', 'NOSUCH9'), 'an unknown host', /INVALID_ARGUMENT: --into names NOSUCH9, which neither the config nor the host records declare/);
      assertBadInput(await restore('--shards', '1', '--into', spare[0]!, '--to-time', String(Date.now() + 3_600_000)), 'after the archive', /INVALID_ARGUMENT: the archived log of .* ends .*: nothing changed/);
      assertBadInput(await restore('--into', spare[0]!), '--into without --shards', /INVALID_ARGUMENT: --into needs --shards/);
      assertBadInput(await restore('--resume', 'restore-1-1-abcdef'), 'an unknown restore', /UNKNOWN_MOVE: no restore restore-1-1-abcdef/);
      const again = await ShardKit.open({ configPath: fx.cluster.configPath, dataDir: fx.dir });
      try {
        assert.equal(await present(again, [o.id]), 1, 'shard 3 still reads from its pair');
        const map = await again.refreshShardMap();
        assert.equal(map.locate(3).master, first);
        assert.deepEqual(map.moves().filter((m) => m.phase !== 'switched'), [], 'no move left recorded');
        assert.ok(map.version >= version);
      } finally {
        await again.close();
      }
      assert.deepEqual(readdirSync(join(to, 'restores')).length, 1, 'only the successful restore\'s record is kept');
    });

    test('kill -9 of the restoring process under the freeze, then --abort: shard 1 is back on its pair, the spare\'s copy dropped; killed after the copy, then --resume: switched in', async () => {
      const cluster = DevCluster.require(fx.dir);
      const tablesOnSpare = async () => engine === 'mariadb'
        ? Number((await cluster.instance(spare[0]!).admin<Array<{ n: number }>>("SELECT COUNT(*) AS n FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'db00001'"))[0]!.n)
        : Number((await pgServer(cluster, spare[0]!).sql<{ n: string }>("SELECT count(*)::text AS n FROM information_schema.tables WHERE table_schema = 'db00001'", [], 'shardkit'))[0]!.n);
      const args = ['--dir', fx.dir, '--from', to, '--json'];
      // The newest backup as it was copied (no --to-time).
      const aborted = await killedAfter('frozen', ['--shards', '1', '--into', spare[0]!, '--into-slave', spare[1]!, ...args]);
      const kit = await ShardKit.open({ configPath: fx.cluster.configPath, dataDir: fx.dir });
      try {
        assert.equal((await kit.refreshShardMap()).move(aborted)?.phase, 'frozen', 'the killed restore left its move frozen');
        const a = await cli(['backup', 'restore', '--abort', aborted, ...args]);
        assert.equal(a.code, 0, a.stderr);
        assert.equal((JSON.parse(a.stdout.trim().split('\n').at(-1)!) as { outcome: string }).outcome, 'aborted');
        const map = await kit.refreshShardMap();
        assert.equal(map.locate(1).master, first);
        assert.equal(map.move(aborted), undefined);
        assert.equal(await tablesOnSpare(), 0, 'the spare\'s copy of shard 1 is dropped');
        const o = await kit.objects.create('pin', { after: 'abort' }, { shard: 1 });
        assert.equal(await present(kit, [o.id]), 1, 'shard 1 takes writes on its pair again');

        const resumed = await killedAfter('copied', ['--shards', '1', '--into', spare[0]!, '--into-slave', spare[1]!, ...args]);
        const wrongTool = await cli(['shards', 'move', '1', '--resume', '--dir', fx.dir]);
        assert.notEqual(wrongTool.code, 0);
        assert.match(wrongTool.stderr, /is a restore's: take it up with shardkit backup restore --from PATH --resume restore-/);
        const r = await cli(['backup', 'restore', '--resume', resumed, ...args]);
        assert.equal(r.code, 0, r.stderr);
        assert.equal((JSON.parse(r.stdout.trim().split('\n').at(-1)!) as { outcome: string }).outcome, 'switched');
        assert.equal((await kit.refreshShardMap()).locate(1).master, spare[0]);
        assert.ok((await tablesOnSpare()) > 0);
        const n = await kit.objects.create('pin', { after: 'resume' }, { shard: 1 });
        assert.equal(await present(kit, [n.id]), 1, 'shard 1 takes writes on the spare');
      } finally {
        await kit.close();
      }
      const verified = await cli(['shards', 'verify', '1', '--json', '--dir', fx.dir]);
      assert.equal(verified.code, 0, verified.stdout + verified.stderr);
      // The live rows the restores replaced stayed fenced on the old pair until now.
      const dropped = await cli(['shards', 'drop-moved', '--dir', fx.dir, '--json']);
      assert.equal(dropped.code, 0, dropped.stderr);
      const fenced = engine === 'mariadb'
        ? Number((await cluster.instance(first).admin<Array<{ n: number }>>("SELECT COUNT(*) AS n FROM information_schema.SCHEMATA WHERE SCHEMA_NAME IN ('db00001_moved', 'db00002_moved')"))[0]!.n)
        : Number((await pgServer(cluster, first).sql<{ n: string }>("SELECT count(*)::text AS n FROM pg_namespace WHERE nspname IN ('db00001_moved', 'db00002_moved')", [], 'shardkit'))[0]!.n);
      assert.equal(fenced, 0, 'drop-moved removed the restored shards\' old rows');
    });

    test('--shards 0 without --into: refused while a service is connected, then with the services stopped shard 0 is put back in place as the backup copied it; ids go on past every id handed out', async () => {
      const restore = (...args: string[]) => cli(['backup', 'restore', '--dir', fx.dir, '--from', to, '--shards', '0', '--json', ...args]);
      const service = await ShardKit.open({ configPath: fx.cluster.configPath, dataDir: fx.dir });
      let marker: bigint;
      try {
        marker = (await service.objects.create('pin', { written: 'after the backup' }, { shard: 0 })).id;
        const refused = await restore();
        assert.notEqual(refused.code, 0);
        assert.match(refused.stderr, /PRECONDITION_FAILED: .* (connection\(s\) of the service user|client connection\(s\) to) .*stop the services first \(or --force\): nothing changed/);
        assert.equal(await present(service, [marker]), 1, 'nothing changed');
      } finally {
        await service.close();
      }
      const r = await restore();
      assert.equal(r.code, 0, r.stderr);
      const result = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as { outcome: string; pairs: Record<string, number[]>; rows: number };
      assert.equal(result.outcome, 'restored');
      assert.deepEqual(result.pairs, { [first]: [0] });
      const kit = await ShardKit.open({ configPath: fx.cluster.configPath, dataDir: fx.dir });
      try {
        const beforeBackup = shard0.filter((a) => a.at < backupStarted).map((a) => a.id);
        const afterBackup = shard0.filter((a) => a.sentAt! > backupEnded).map((a) => a.id);
        assert.ok(beforeBackup.length > 0 && afterBackup.length > 0);
        assert.equal(await present(kit, beforeBackup), beforeBackup.length, 'shard 0: every write acknowledged before the backup is there');
        assert.equal(await present(kit, [...afterBackup, marker]), 0, 'shard 0: no write sent after the backup is there');
        assert.equal((await kit.refreshShardMap()).locate(0).master, first, 'the shard stays on its pair');
        const fresh = await kit.objects.create('pin', { after: 'restore in place' }, { shard: 0 });
        const handedOut = [...shard0.map((a) => a.id), marker].map((id) => pinterestId.decode(id).localId);
        assert.ok(handedOut.every((l) => pinterestId.decode(fresh.id).localId > l), 'an id made after the restore passes every id handed out before it');
      } finally {
        await kit.close();
      }
      const verified = await cli(['shards', 'verify', '0', '--json', '--dir', fx.dir]);
      assert.equal(verified.code, 0, verified.stdout + verified.stderr);
    });
  });
}

/** Runs `backup restore` as its own process until it has recorded `phase`, kills it with -9, and returns its move id. */
async function killedAfter(phase: string, args: string[]): Promise<string> {
  const child = spawn(process.execPath, [CLI, 'backup', 'restore', ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, SHARDKIT_TEST_MOVE_STOP_AFTER: phase } });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<void>((r) => child.on('exit', () => r()));
  try {
    await until(`the restore to stop after ${phase}`, () => err.includes(`stopped after ${phase}`) || child.exitCode !== null);
    assert.equal(child.exitCode, null, `the restore exited before ${phase}: ${err}`);
  } finally {
    child.kill('SIGKILL');
    await exited;
  }
  const started = out.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { moveId?: string }).find((l) => l.moveId !== undefined);
  assert.ok(started?.moveId, out);
  return started.moveId;
}
