/**
 * kill -9 during backups (#32), one body for both server engines: of the slave while its copy
 * streams, of the `backup create` process while it holds the slave (applier stopped / replay
 * paused), and of the archiver (its tool left running, then both). Each time the next run
 * resumes or starts over cleanly, an incomplete backup never gets a manifest, the slave applies
 * again, and the archive has no gap: restore --to-time T after the restarts holds exactly the
 * writes acknowledged before T.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { isShardKitError } from '../../src/errors.js';
import { ShardKit } from '../../src/kit/shard-kit.js';
import { createBackup, DirectoryTarget, openBackupEngine } from '../../src/ops/backup/index.js';
import { archivedUntil } from '../../src/ops/backup/mariadb-binlog-archive.js';
import { archivedWalUntil } from '../../src/ops/backup/postgres-wal-archive.js';
import { devUp, type DevCluster } from '../../src/ops/dev-cluster.js';
import { pgServer } from '../../src/ops/dev/dev-postgres.js';
import { processRunning } from '../../src/ops/proc-stat.js';
import { DEFAULT_POSTGRES_BIN } from '../../src/ops/postgres/postgres-instance.js';
import { CLI, cli, ensureBuilt } from '../cli/cli-harness.js';
import { newLedger, writeLoad } from '../failover/ledger.js';
import { startTestCluster } from '../mysql/cluster-fixture.js';
import { present, startArchiver, until } from './backup-helpers.js';

type Fixture = Awaited<ReturnType<typeof startTestCluster>>;

/** A directory target that runs `onCopy` when the first bytes of a pair's copy arrive, holding the copy back meanwhile. */
class CopyHookTarget extends DirectoryTarget {
  constructor(dir: string, private readonly suffix: string, private readonly onCopy: () => Promise<void>) {
    super(dir);
  }

  override put(name: string, source: Readable | Buffer | string): Promise<number> {
    if (!name.endsWith(this.suffix) || !(source instanceof Readable)) return super.put(name, source);
    let fired = false;
    const hook = new Transform({
      transform: (chunk, _enc, done) => {
        if (fired) return done(null, chunk);
        fired = true;
        this.onCopy().then(() => done(null, chunk), done);
      },
    });
    source.on('error', (err) => hook.destroy(err));
    return super.put(name, source.pipe(hook));
  }
}

/** What differs between the engines. */
interface Side {
  master: string;
  slave: string;
  /** The name a pair's copy ends with in the target. */
  copySuffix: string;
  tool: string;
  kill(c: DevCluster, host: string): Promise<void>;
  /** Runs one statement on the master. */
  onMaster(c: DevCluster, sql: string): Promise<void>;
  count(c: DevCluster, host: string, table: string): Promise<number>;
  caughtUp(c: DevCluster): Promise<void>;
  archivedUntil(dir: string): Promise<number | undefined>;
  /** The tool that copies a pair, and the environment that makes the backup run `dir`'s wrapper of it instead. */
  copyTool: { name: string; real: string; env(dir: string): Record<string, string>; siblings?: string };
  /** Whether the slave applies what it receives (no paused replay, no stopped applier). */
  applies(c: DevCluster): Promise<boolean>;
}

const pgCaughtUp = async (c: DevCluster) => {
  const [at] = await pgServer(c, 'PG001A').sql<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn');
  await until(`PG001B replayed ${at!.lsn}`, async () => (await pgServer(c, 'PG001B').sql<{ ok: boolean }>('SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn AS ok', [at!.lsn]))[0]?.ok === true);
};

const SIDES: Record<'postgres' | 'mariadb', Side> = {
  postgres: {
    master: 'PG001A',
    slave: 'PG001B',
    copySuffix: '.base.tar.gz',
    tool: 'pg_receivewal',
    kill: (c, host) => pgServer(c, host).kill(),
    onMaster: async (c, sql) => void (await pgServer(c, 'PG001A').sql(sql, [], 'shardkit')),
    count: async (c, host, table) => Number((await pgServer(c, host).sql<{ n: string }>(`SELECT count(*)::text AS n FROM ${table}`, [], 'shardkit'))[0]!.n),
    caughtUp: pgCaughtUp,
    archivedUntil: (dir) => archivedWalUntil(dir),
    copyTool: { name: 'pg_basebackup', real: join(DEFAULT_POSTGRES_BIN, 'pg_basebackup'), env: (dir) => ({ SHARDKIT_POSTGRES_BIN: dir }), siblings: DEFAULT_POSTGRES_BIN },
    applies: async (c) => (await pgServer(c, 'PG001B').sql<{ s: string }>('SELECT pg_get_wal_replay_pause_state() AS s'))[0]?.s === 'not paused',
  },
  mariadb: {
    master: 'MySQL001A',
    slave: 'MySQL001B',
    copySuffix: '.sql.gz',
    tool: 'mariadb-binlog',
    kill: (c, host) => c.instance(host).kill(),
    onMaster: async (c, sql) => void (await c.instance('MySQL001A').admin(sql)),
    count: async (c, host, table) => Number((await c.instance(host).admin<Array<{ n: number }>>(`SELECT COUNT(*) AS n FROM ${table}`))[0]!.n),
    caughtUp: (c) => c.waitForReplication(),
    archivedUntil: async (dir) => {
      const t = await archivedUntil(dir);
      return t === undefined ? undefined : t + 999;
    },
    copyTool: { name: 'mariadb-dump', real: '/usr/bin/mariadb-dump', env: (dir) => ({ PATH: `${dir}:${process.env.PATH ?? ''}` }) },
    applies: async (c) => (await c.instance('MySQL001B').admin<Array<Record<string, unknown>>>('SHOW SLAVE STATUS'))[0]?.Slave_SQL_Running === 'Yes',
  },
};

/**
 * A directory with a wrapper of the copy tool that records its pid, then waits for a file before
 * running the real tool: a backup run with it stops exactly at its copy, holding the slave.
 */
function gatedTool(tool: Side['copyTool']): { dir: string; env: Record<string, string>; pid: () => number | undefined } {
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-gate-'));
  if (tool.siblings) for (const f of readdirSync(tool.siblings)) if (f !== tool.name) symlinkSync(join(tool.siblings, f), join(dir, f));
  writeFileSync(join(dir, tool.name), `#!/bin/sh\necho $$ > ${dir}/started\nwhile [ ! -e ${dir}/go ]; do sleep 0.05; done\nexec ${tool.real} "$@"\n`, { mode: 0o755 });
  return { dir, env: tool.env(dir), pid: () => (existsSync(join(dir, 'started')) ? Number(readFileSync(join(dir, 'started'), 'utf8')) : undefined) };
}

const FILLER = {
  postgres: ["CREATE TABLE db00000.bk_filler (id int PRIMARY KEY, pad text)", "INSERT INTO db00000.bk_filler SELECT g, repeat('x', 250) FROM generate_series(1, 100000) g"],
  mariadb: ['CREATE TABLE db00000.bk_filler (id INT PRIMARY KEY, pad VARCHAR(255))', "INSERT INTO db00000.bk_filler SELECT seq, REPEAT('x', 250) FROM db00000.seq_1_to_100000"],
};

const listed = async (to: string) => (JSON.parse((await cli(['backup', 'list', '--from', to, '--json'])).stdout) as { backups: Array<{ id: string; complete: boolean }> }).backups;

for (const engine of ['postgres', 'mariadb'] as const) {
  const side = SIDES[engine];
  describe(`backup crashes on a ${engine} dev cluster: the slave, the backup process, the archiver killed with -9`, () => {
    let fx: Fixture;
    let to: string;
    const children: ChildProcess[] = [];
    const streamerPid = () => Number(readFileSync(join(to, 'archive', side.master, 'streamer.pid'), 'utf8'));
    before(async () => {
      ensureBuilt();
      fx = await startTestCluster({ ...(engine === 'postgres' ? { engine } : {}), pairs: 1, shards: 4, prefix: `shardkit-bk-crash-${engine}-` });
      to = mkdtempSync(join(tmpdir(), `shardkit-bk-crash-${engine}-to-`));
      // ~25 MB in one table, more than every buffer between the server and the file: a kill lands mid-copy.
      for (const sql of FILLER[engine]) await side.onMaster(fx.cluster, sql);
      await side.caughtUp(fx.cluster);
    });
    after(async () => {
      for (const c of children) c.kill('SIGKILL');
      rmSync(to, { recursive: true, force: true });
      await fx?.stop();
    });

    test('kill -9 of the slave while its copy streams: create fails naming it, the backup stays INCOMPLETE; once the slave is back the next create completes and verifies, and the slave applies', async () => {
      const engineApi = await openBackupEngine({ dir: fx.dir });
      try {
        const target = new CopyHookTarget(to, side.copySuffix, () => side.kill(fx.cluster, side.slave));
        await assert.rejects(createBackup(engineApi, target, { progress: 'silent' }), (err: Error) => {
          assert.ok(isShardKitError(err, 'SHARD_UNAVAILABLE'), String(err));
          assert.match(err.message, new RegExp(`copying ${side.master} from ${side.slave} failed .*incomplete \\(no manifest\\).*once ${side.slave} is back: it resumes`));
          return true;
        });
      } finally {
        await engineApi.close();
      }
      const backups = await listed(to);
      assert.deepEqual(backups.map((b) => b.complete), [false], 'listed, as incomplete');
      assert.deepEqual(readdirSync(join(to, backups[0]!.id)).filter((n) => n.endsWith(side.copySuffix)), [], 'no copy object: only its .partial');

      await devUp({ dir: fx.dir, skipInit: true });
      const again = await cli(['backup', 'create', '--dir', fx.dir, '--to', to, '--json']);
      assert.equal(again.code, 0, again.stderr);
      assert.deepEqual((await listed(to)).map((b) => b.complete), [true], 'the incomplete one resumed or removed');
      const v = await cli(['backup', 'verify', '--dir', fx.dir, '--from', to, '--json']);
      assert.equal(v.code, 0, v.stderr);
      assert.deepEqual((JSON.parse(v.stdout) as { differing: string[] }).differing, []);
      await side.onMaster(fx.cluster, 'INSERT INTO db00000.bk_filler VALUES (0, \'after\')');
      await side.caughtUp(fx.cluster);
      assert.equal(await side.count(fx.cluster, side.slave, 'db00000.bk_filler'), 100_001, 'the slave applies again');
    });

    test('kill -9 of the backup process while it holds the slave, at its copy: no manifest; the next create lets the slave apply again, completes and verifies', async () => {
      const gate = gatedTool(side.copyTool);
      try {
        const child = spawn(process.execPath, [CLI, 'backup', 'create', '--dir', fx.dir, '--to', to], { stdio: 'ignore', env: { ...process.env, ...gate.env } });
        children.push(child);
        const exited = new Promise((r) => child.on('exit', r));
        await until(`the backup reached its copy (${side.copyTool.name})`, () => gate.pid() !== undefined);
        assert.equal(await side.applies(fx.cluster), false, 'the backup holds the slave (applier stopped / replay paused)');
        child.kill('SIGKILL');
        await exited;
        process.kill(gate.pid()!, 'SIGKILL');
        const backups = await listed(to);
        assert.deepEqual(backups.map((b) => b.complete), [true, false], 'the killed one listed as incomplete');
        assert.equal(existsSync(join(to, backups[1]!.id, 'manifest.json')), false);
        assert.equal(await side.applies(fx.cluster), false, 'the slave still held by the killed backup');
      } finally {
        rmSync(gate.dir, { recursive: true, force: true });
      }
      const again = await cli(['backup', 'create', '--dir', fx.dir, '--to', to, '--json']);
      assert.equal(again.code, 0, again.stderr);
      assert.deepEqual((await listed(to)).map((b) => b.complete), [true, true], 'the killed one resumed or removed: no incomplete backup left');
      assert.equal(await side.applies(fx.cluster), true, 'the slave applies again');
      const v = await cli(['backup', 'verify', '--dir', fx.dir, '--from', to, '--json']);
      assert.equal(v.code, 0, v.stderr);
      assert.deepEqual((JSON.parse(v.stdout) as { differing: string[] }).differing, []);
      await side.onMaster(fx.cluster, 'INSERT INTO db00000.bk_filler VALUES (-1, \'after the kill\')');
      await side.caughtUp(fx.cluster);
      assert.equal(await side.count(fx.cluster, side.slave, 'db00000.bk_filler'), 100_002);
    });

    test('kill -9 of the archiver (its tool left running), then of archiver and tool together, while writes go on: each restart resumes, and restore --to-time T holds exactly the writes acknowledged before T', async () => {
      const first = startArchiver(fx.dir, to);
      children.push(first.child);
      await until('the archiver streams', () => existsSync(join(to, 'archive', side.master, 'streamer.pid')));
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
        const orphan = streamerPid();
        first.child.kill('SIGKILL');
        await first.exit;
        assert.ok(processRunning(orphan), `${side.tool} outlives its killed archiver`);
        n = acked();
        await until('writes', () => acked() >= n + 50);
        const second = startArchiver(fx.dir, to);
        children.push(second.child);
        await until('the second archiver ended the leftover tool', () => second.stderr().includes(`ended ${side.tool} ${orphan} left by a killed archiver`));
        await until('the second archiver streams', () => streamerPid() !== orphan);
        n = acked();
        await until('writes', () => acked() >= n + 50);
        // The whole group killed: nothing archives while writes go on.
        const tool = streamerPid();
        second.child.kill('SIGKILL');
        process.kill(tool, 'SIGKILL');
        await second.exit;
        n = acked();
        await until('writes while nothing archives', () => acked() >= n + 50);
        last = startArchiver(fx.dir, to);
        children.push(last.child);
        n = acked();
        await until('writes', () => acked() >= n + 50);
        // On a whole second: MariaDB's binlog stamps events in seconds (docs/backups.md).
        T = Math.ceil(Date.now() / 1000) * 1000;
        await until('writes sent after T', () => ledger.acked.filter((a) => a.sentAt! > T).length >= 50);
      } finally {
        release();
        await load;
        await Promise.all(kits.map((k) => k.close()));
      }
      await side.caughtUp(fx.cluster);
      await until('the archive reaches T', async () => ((await side.archivedUntil(join(to, 'archive', side.master))) ?? 0) >= T);
      last!.child.kill('SIGTERM');
      assert.equal(await last!.exit, 0, last!.stderr());

      const beforeT = ledger.acked.filter((a) => a.at < T).map((a) => a.id);
      const afterT = ledger.acked.filter((a) => a.sentAt! >= T).map((a) => a.id);
      const r = await cli(['backup', 'restore', '--dir', fx.dir, '--from', to, '--to-time', new Date(T).toISOString()]);
      assert.equal(r.code, 0, r.stderr);
      const kit = await ShardKit.open({ configPath: fx.cluster.configPath, dataDir: fx.dir });
      try {
        assert.equal(await present(kit, beforeT), beforeT.length, 'every write acknowledged before T is back: no gap in the archive');
        assert.equal(await present(kit, afterT), 0, 'no write sent at or after T is there');
      } finally {
        await kit.close();
      }
    });
  });
}
