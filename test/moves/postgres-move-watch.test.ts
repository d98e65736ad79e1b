/**
 * PostgreSQL moves and verify, on a real dev cluster (`dev up --engine postgres`: object shards
 * 0..7 on PG001A with its streaming standby PG001B, then `dev add-pair`: PG002A/PG002B):
 * - vitess#9481: a transaction opened on a moving shard before the freeze either commits before
 *   the fence and reaches the target, or fails (a statement after the fence gets 42P01; one held
 *   past the fence's lock timeout makes the move abort, and commits on the source, which serves
 *   on). Never acknowledged and lost;
 * - a transaction left open on the source when the copy starts: slot creation is given up after
 *   slotWaitMs, the move aborts naming the session, and nothing is left on either server;
 * - watching a move: rows copied in the move's progress record and in the CLI's JSON progress
 *   lines, and the dashboard's move view (phase, progress with rows, lag in WAL bytes) in Chromium;
 * - `shards verify` of a master against its standby: clean through the CLI (exit 0); a standby
 *   whose replay is paused is waited for (clean once it resumes) or reported (an error, never a
 *   stale comparison); a server that is not the master's standby is refused; and the chunk
 *   comparison itself, on two servers, names a changed, a missing and an extra row;
 * - verify before the freeze (vitess#6951): a row changed by hand on the target after the copy
 *   makes the move abort before anything is frozen; a resumed mover (no comparison of its own
 *   before the freeze) compares in full under the freeze and refuses a row changed meanwhile;
 *   the whole-table comparison of a live source (settleTables) tells a table written during the
 *   comparison (unsettled, left for the freeze) from one that differs.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { chromium } from 'playwright-core';
import { pinterestId } from '../../src/ids/pinterest-id.js';
import { loadConfigFile } from '../../src/config/config.js';
import { buildApp } from '../../src/http/app.js';
import { ShardKit } from '../../src/kit/shard-kit.js';
import { devClusterDown, devUp, DevCluster } from '../../src/ops/dev-cluster.js';
import { pgServer } from '../../src/ops/dev/dev-postgres.js';
import { createTopologyStore } from '../../src/topology/index.js';
import { resolveSchema } from '../../src/config/config.js';
import { isShardKitError } from '../../src/errors.js';
import { runMove, type MoveEvent } from '../../src/moves/move-runner.js';
import type { MoveEngine, RowProgress } from '../../src/moves/move-engine.js';
import { createPostgresMoveEngine, replicationName, type PostgresMoveEngine } from '../../src/moves/postgres/index.js';
import { compareChunks, CHUNK_ROWS, settleTables } from '../../src/moves/postgres/postgres-verify.js';
import { tableWrites, writtenBetween } from '../../src/moves/postgres/table-writes.js';
import type { TopologyStore } from '../../src/topology/topology-store.js';
import { cli, ensureBuilt } from '../cli/cli-harness.js';

const db = (shard: number) => `db${String(shard).padStart(5, '0')}`;
const SOURCE = 'PG001A';
const STANDBY = 'PG001B';
const TARGET = { master: 'PG002A', slave: 'PG002B' };
const CHROMIUM = process.env.SHARDKIT_CHROMIUM ?? '/usr/bin/chromium';

describe('PostgreSQL moves: an open transaction across the freeze, watching a move, verify of a master against its standby (real PostgreSQL 15)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-pgwatch-'));
  const configPath = join(dir, 'shardkit.json');
  const args = ['--config', configPath, '--data', dir];
  let c: DevCluster;
  let kit: ShardKit;
  let early: ShardKit;
  const stores: TopologyStore[] = [];
  const engines: PostgresMoveEngine[] = [];
  const sql = async <T extends Record<string, unknown>>(host: string, text: string, values: unknown[] = []) => pgServer(c, host).sql<T>(text, values, 'shardkit');
  const ids = async (host: string, ns: string): Promise<string[]> =>
    (await sql<{ n: string }>(host, 'SELECT count(*)::text AS n FROM pg_tables WHERE schemaname = $1 AND tablename = $2', [ns, 'pins']))[0]!.n === '0'
      ? [] : (await sql<{ id: string }>(host, `SELECT local_id::text AS id FROM "${ns}".pins ORDER BY local_id`)).map((r) => r.id);
  const client = async (host: string): Promise<pg.Client> => {
    const config = c.config();
    if (config.storage.backend !== 'postgres') throw new Error('not a postgres config');
    const h = config.hosts[host]!;
    const x = new pg.Client({ host: h.host, port: h.port, user: config.storage.user, database: config.storage.database });
    await x.connect();
    return x;
  };
  const engine = (options: { lockTimeoutMs?: number; slotWaitMs?: number } = {}): PostgresMoveEngine => {
    const config = c.config();
    if (config.storage.backend !== 'postgres') throw new Error('not a postgres config');
    const e = createPostgresMoveEngine({ hosts: config.hosts, user: config.storage.user, database: config.storage.database, schema: resolveSchema(config), ...options });
    engines.push(e);
    return e;
  };
  const store = (): TopologyStore => {
    const s = createTopologyStore(c.config().topologyStore, { dataDir: dir });
    stores.push(s);
    return s;
  };
  const hosts = () => Object.keys(c.config().hosts);
  const replicationLeft = async (): Promise<string[]> => {
    const out: string[] = [];
    for (const h of [SOURCE, TARGET.master]) {
      for (const r of await sql<{ n: string }>(h, "SELECT 'pub ' || pubname AS n FROM pg_publication UNION ALL SELECT 'sub ' || subname FROM pg_subscription UNION ALL SELECT 'slot ' || slot_name FROM pg_replication_slots WHERE slot_type = 'logical'")) out.push(`${h}: ${r.n}`);
    }
    return out;
  };

  before(async () => {
    ensureBuilt();
    await devUp({ dir, engine: 'postgres', pairs: 1, shards: 8, modShards: 4 });
    // A service already running when the operator adds a pair, as on a live site.
    // Opened as `serve --config` opens it: the parsed config, and the file to read hosts from later.
    early = await ShardKit.open({ config: loadConfigFile(configPath), configPath, dataDir: dir });
    await early.objects.create('pin', { early: 'before add-pair' }, { shard: 0 });
    const added = await cli(['dev', 'add-pair', '--dir', dir, '--json']);
    assert.equal(added.code, 0, added.stderr);
    c = DevCluster.require(dir);
    kit = await ShardKit.open({ configPath, dataDir: dir });
    for (let s = 0; s <= 7; s++) for (let i = 0; i < 25; i++) await kit.objects.create('pin', { s, i }, { shard: s });
  });
  after(async () => {
    await kit?.close();
    await early?.close();
    for (const e of engines) await e.close();
    for (const s of stores) await s.close();
    try {
      const cl = DevCluster.open(dir);
      if (cl) await devClusterDown(cl);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('vitess#9481: a transaction open across the freeze commits before the fence and reaches the target; one that writes after the fence fails; nothing acknowledged is lost', async () => {
    // Both begun before the freeze, once the copy runs (a transaction open when the copy starts
    // delays it: creating the subscription's slot waits for every running transaction):
    // t1 writes shard 0 (moving), t2 writes shard 2 (not moving).
    const t1 = await client(SOURCE);
    const t2 = await client(SOURCE);
    try {
      let open = '';
      let commit: Promise<unknown> | undefined;
      let committed = false;
      let late: unknown;
      const events: MoveEvent[] = [];
      const result = await runMove({
        store: store(), engine: engine(), hosts: hosts(), start: { span: { first: 0, last: 0 }, target: TARGET, holdMs: 60_000 },
        onEvent: (e) => events.push(e),
        afterPhase: async (phase) => {
          if (phase === 'copied') {
            await t1.query('BEGIN');
            open = (await t1.query<{ id: string }>(`INSERT INTO ${db(0)}.pins (data, ts) VALUES ('{"open":1}', 0) RETURNING local_id::text AS id`)).rows[0]!.id;
            await t2.query('BEGIN');
            await t2.query(`INSERT INTO ${db(2)}.pins (data, ts) VALUES ('{"late":1}', 0)`);
          }
          // The fence (LOCK ... ACCESS EXCLUSIVE) waits for t1: commit it while the fence waits.
          if (phase === 'frozen') commit = sleep(300).then(() => t1.query('COMMIT')).then(() => (committed = true));
          // After the fence, t2 (which never touched shard 0 before) writes there: the table is gone.
          if (phase === 'fenced') {
            late = await t2.query(`INSERT INTO ${db(0)}.pins (data, ts) VALUES ('{"late":1}', 0)`).then(() => 'acknowledged', (err: { code?: string }) => err.code);
          }
        },
      });
      await commit;
      assert.equal(result.outcome, 'switched');
      assert.equal(committed, true, 't1 was acknowledged');
      assert.ok((await ids(TARGET.master, db(0))).includes(open), `t1's row ${open} (committed during the fence's wait) is on the target`);
      assert.ok((await ids(SOURCE, `${db(0)}_moved`)).includes(open), 'and in the fenced source copy');
      assert.equal(late, '42P01', 'a write after the fence fails (relation does not exist): never acknowledged');
      await t2.query('ROLLBACK');
      assert.equal((await sql<{ n: string }>(TARGET.master, `SELECT count(*)::text AS n FROM ${db(0)}.pins WHERE data = '{"late":1}'`))[0]!.n, '0');
      assert.equal((await sql<{ n: string }>(SOURCE, `SELECT count(*)::text AS n FROM ${db(2)}.pins WHERE data = '{"late":1}'`))[0]!.n, '0', 't2 rolled back as a whole');
      // The fence waited for t1: the phase after the freeze came once t1 committed.
      assert.deepEqual(events.map((e) => e.phase).filter((p, i, a) => a.indexOf(p) === i), ['started', 'copied', 'frozen', 'fenced', 'switched']);
      assert.deepEqual(await replicationLeft(), []);
      // The service started before `dev add-pair` writes to the moved shard without a restart:
      // it learns PG002A's address from its config file (the old code answered INVALID_CONFIG, a 400).
      const o = await early.objects.create('pin', { early: 'after the move' }, { shard: 0 });
      assert.ok((await ids(TARGET.master, db(0))).includes(String(pinterestId.decode(o.id).localId)), 'written on the target');
      assert.deepEqual((await early.objects.get(o.id)).data, { early: 'after the move' });
    } finally {
      await t1.end();
      await t2.end();
    }
  });

  test('vitess#9481: a transaction held past the fence\'s lock timeout makes the move abort; it then commits on the source, which serves shard 1 on', async () => {
    const t = await client(SOURCE);
    try {
      let open = '';
      await assert.rejects(
        runMove({
          store: store(), engine: engine({ lockTimeoutMs: 1000 }), hosts: hosts(), start: { span: { first: 1, last: 1 }, target: TARGET, holdMs: 60_000 },
          afterPhase: async (phase) => {
            if (phase !== 'copied') return;
            await t.query('BEGIN');
            open = (await t.query<{ id: string }>(`INSERT INTO ${db(1)}.pins (data, ts) VALUES ('{"held":1}', 0) RETURNING local_id::text AS id`)).rows[0]!.id;
          },
        }),
        (err) => isShardKitError(err, 'SHARD_UNAVAILABLE') && /lock timeout/.test(err.message) && /back on PG001A/.test(err.message),
      );
      await t.query('COMMIT');
      assert.ok((await ids(SOURCE, db(1))).includes(open), 'the held transaction committed on the source');
      const map = await kit.shardMap();
      assert.equal(map.locate(1).master, SOURCE);
      assert.deepEqual(map.moves().filter((m) => m.range[0] === 1), []);
      assert.deepEqual(await ids(TARGET.master, db(1)), [], 'no copy left on the target');
      assert.deepEqual(await replicationLeft(), []);
      const o = await kit.objects.create('pin', { back: true }, { shard: 1 });
      assert.ok((await ids(SOURCE, db(1))).includes(String(pinterestId.decode(o.id).localId)));
    } finally {
      await t.end();
    }
  });

  test('a transaction left open on the source when the copy starts: the slot waits at most slotWaitMs, then the move aborts naming its pid, leaves nothing behind, and goes through once it ends', async () => {
    const t = await client(SOURCE);
    try {
      // On a shard that is not moving: a logical slot waits for every transaction holding an xid.
      await t.query('BEGIN');
      await t.query(`INSERT INTO ${db(3)}.pins (data, ts) VALUES ('{"idle":1}', 0)`);
      const pid = (await t.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      await assert.rejects(
        runMove({ store: store(), engine: engine({ slotWaitMs: 2000 }), hosts: hosts(), start: { span: { first: 2, last: 2 }, target: TARGET } }),
        (err) => isShardKitError(err, 'SHARD_UNAVAILABLE') && /replication slot on PG001A waited 2000 ms/.test(err.message)
          && err.message.includes(`pid ${pid} (idle in transaction since `) && /back on PG001A/.test(err.message),
      );
      // Checked while the transaction is still open: the source's walsender was waiting to make the slot.
      assert.deepEqual(await replicationLeft(), [], 'no slot, subscription or publication left');
      const map = await kit.shardMap();
      assert.equal(map.locate(2).master, SOURCE);
      assert.deepEqual(map.moves().filter((m) => m.range[0] === 2), []);
      await kit.objects.create('pin', { during: true }, { shard: 2 });
      await t.query('COMMIT');
    } finally {
      await t.end();
    }
    const onSource = await ids(SOURCE, db(2));
    const r = await runMove({ store: store(), engine: engine({ slotWaitMs: 2000 }), hosts: hosts(), start: { span: { first: 2, last: 2 }, target: TARGET } });
    assert.equal(r.outcome, 'switched');
    assert.deepEqual(await ids(TARGET.master, db(2)), onSource, 'every row, the one written during the first try included');
    assert.deepEqual(await replicationLeft(), []);
  });

  test('the CLI prints JSON progress lines with rows copied (and the copy\'s last line has every shard and row)', async () => {
    const moved = await cli(['shards', 'move', '4..5', '--to', TARGET.master, '--to-slave', TARGET.slave, '--json', ...args]);
    assert.equal(moved.code, 0, moved.stderr);
    const lines = moved.stdout.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    const progress = lines.filter((l) => l.event === 'progress');
    const rows = (await ids(SOURCE, `${db(4)}_moved`)).length + (await ids(SOURCE, `${db(5)}_moved`)).length;
    assert.ok(rows >= 50);
    // The last line of the copy: every shard, every row the source held.
    const copy = progress.filter((l) => l.phase === 'started').at(-1);
    // Bytes: the binary COPY streams of the shards' tables (more than their rows' ids alone); a
    // rate, and nothing left to copy.
    assert.ok(typeof copy?.bytesCopied === 'number' && copy.bytesCopied > rows * 8, `bytes copied: ${JSON.stringify(copy)}`);
    assert.ok(typeof copy.rowsPerSecond === 'number' && copy.rowsPerSecond > 0 && typeof copy.bytesPerSecond === 'number', `rates: ${JSON.stringify(copy)}`);
    const { bytesCopied, rowsPerSecond, bytesPerSecond, ...rest } = copy;
    assert.ok(bytesCopied !== undefined && rowsPerSecond !== undefined && bytesPerSecond !== undefined);
    assert.deepEqual(rest, { event: 'progress', moveId: lines[0]!.moveId, phase: 'started', shardsDone: 2, shardsTotal: 2, rowsCopied: rows, rowsTotal: rows, etaSeconds: 0 });
    assert.equal(lines.at(-1)!.outcome, 'switched');
  });

  test('the dashboard shows a PostgreSQL move in Chromium: the copy\'s shards and rows, then the lag in WAL bytes while the target is behind, then switched', { timeout: 600_000 }, async () => {
    const app = await buildApp({ kit });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'] });
    let releaseCopy: () => void = () => {};
    const copyGate = new Promise<void>((r) => (releaseCopy = r));
    const pgEngine = engine();
    // The real engine, held after its copy (phase started) until the test has looked.
    const held: MoveEngine = Object.assign(Object.create(pgEngine) as MoveEngine, {
      prepare: async (m: Parameters<MoveEngine['prepare']>[0], onProgress?: Parameters<MoveEngine['prepare']>[1]) => {
        const detail = await pgEngine.prepare(m, onProgress);
        await copyGate;
        return detail;
      },
    });
    const topo = async () => (await (await fetch(`${base}/v1/topology`)).json()) as { moves?: Array<{ id: string; phase: string; progress?: { phase: string; shardsDone?: number } & RowProgress & { lag?: number } }> };
    const waitFor = async (ok: (m: NonNullable<Awaited<ReturnType<typeof topo>>['moves']>[number]) => boolean) => {
      for (;;) {
        const m = (await topo()).moves?.find((x) => x.id === 'move-pg-dash');
        if (m !== undefined && ok(m)) return m;
        await sleep(100);
      }
    };
    let running: ReturnType<typeof runMove> | undefined;
    try {
      const page = await browser.newPage();
      const problems: string[] = [];
      page.on('pageerror', (err) => problems.push(err.message));
      const rows = (await ids(SOURCE, db(6))).length + (await ids(SOURCE, db(7))).length;
      // maxLag 1 KiB: the freeze waits while the target is behind by more than that.
      running = runMove({ store: store(), engine: held, hosts: hosts(), maxLag: 1024, lagWaitMs: 300_000, start: { span: { first: 6, last: 7 }, target: TARGET, id: 'move-pg-dash', holdMs: 60_000 } });
      running.catch(() => undefined);
      await waitFor((m) => m.phase === 'started' && m.progress?.phase === 'started' && m.progress.shardsDone === 2 && m.progress.rowsCopied === rows);
      await page.goto(`${base}/dashboard/`);
      await page.waitForSelector('#moves tbody tr[data-move="move-pg-dash"]');
      const copying = await page.locator('#moves tbody tr[data-move="move-pg-dash"]').innerText();
      assert.match(copying, new RegExp(`^move-pg-dash\\s+6–7\\s+PG001A\\s+PG002A\\s+copying\\s+2/2 shards, ${rows}/${rows} rows \\(100%\\), [\\d.]+ (B|KiB|MiB) copied, [\\d,]+ rows/s \\([\\d.]+ (B|KiB|MiB)/s\\), ETA 0 s\\s+–\\s+\\d+ s ago\\s+–$`));

      // The target falls behind: its subscription stops while the source takes writes on the moving shards.
      await sql(TARGET.master, `ALTER SUBSCRIPTION ${replicationName('move-pg-dash')} DISABLE`);
      for (let i = 0; i < 100; i++) await kit.objects.create('pin', { behind: i }, { shard: 6 });
      releaseCopy();
      const behind = await waitFor((m) => m.phase === 'copied' && m.progress?.phase === 'copied' && (m.progress.lag ?? 0) > 1024);
      await page.reload();
      await page.waitForSelector('#moves tbody tr[data-move="move-pg-dash"]');
      const lagging = await page.locator('#moves tbody tr[data-move="move-pg-dash"]').innerText();
      const m = /^move-pg-dash\s+6–7\s+PG001A\s+PG002A\s+lag gate: catching up\s+–\s+(\d+)\s+\d+ s ago\s+–$/.exec(lagging);
      assert.ok(m !== null, `the moves row while the target is behind: ${JSON.stringify(lagging)}`);
      assert.ok(Number(m[1]) > 1024, `lag ${m[1]} bytes (the record said ${behind.progress?.lag})`);

      await sql(TARGET.master, `ALTER SUBSCRIPTION ${replicationName('move-pg-dash')} ENABLE`);
      const result = await running;
      assert.equal(result.outcome, 'switched');
      assert.ok((await ids(TARGET.master, db(6))).length >= 125, 'the writes made while the target was behind reached it');
      await page.reload();
      await page.waitForSelector('#moves tbody tr[data-move="move-pg-dash"]');
      assert.match(await page.locator('#moves tbody tr[data-move="move-pg-dash"]').innerText(), /^move-pg-dash\s+6–7\s+PG001A\s+PG002A\s+switched\s+–\s+–\s+–\s+–$/);
      assert.deepEqual(problems, []);
    } finally {
      releaseCopy();
      await running?.catch(() => undefined);
      await browser.close();
      await app.close();
    }
  });

  test('shards verify of a master against its standby: clean through the CLI; a paused standby is waited for, or reported, never compared stale; a server that is not its standby is refused', async () => {
    // Shards 2..3 stay on PG001A, whose standby is PG001B.
    for (let i = 0; i < 10; i++) await kit.objects.create('pin', { more: i }, { shard: 3 });
    const clean = await cli(['shards', 'verify', '2..3', '--json', ...args]);
    assert.equal(clean.code, 0, clean.stderr);
    const report = JSON.parse(clean.stdout) as { shards: number; rows: number; mismatches: unknown[]; skipped: number[] };
    assert.equal(report.shards, 2);
    assert.deepEqual(report.skipped, []);
    assert.deepEqual(report.mismatches, []);
    assert.ok(report.rows >= 60, `compared ${report.rows} rows`);

    const e = engine();
    await sql(STANDBY, 'SELECT pg_wal_replay_pause()');
    try {
      const o = await kit.objects.create('pin', { whilePaused: true }, { shard: 3 });
      const newest = String(pinterestId.decode(o.id).localId);
      assert.ok(!(await ids(STANDBY, db(3))).includes(newest), 'the paused standby lacks the newest row');
      // A short wait: an error that says why, not a mismatch and not "clean".
      await assert.rejects(e.verifyReplica(3, SOURCE, STANDBY, 1500),
        (err) => isShardKitError(err, 'SHARD_UNAVAILABLE') && /PG001B did not replay PG001A's WAL up to/.test(err.message) && /paused/.test(err.message));
      // A long one: the standby resumes meanwhile, and the comparison is made at the master's position.
      const verifying = e.verifyReplica(3, SOURCE, STANDBY, 60_000);
      await sleep(1000);
      await sql(STANDBY, 'SELECT pg_wal_replay_resume()');
      const r = await verifying;
      assert.deepEqual(r.mismatches, []);
      assert.equal(r.rows, (await ids(SOURCE, db(3))).length);
    } finally {
      await sql(STANDBY, 'SELECT pg_wal_replay_resume()');
    }
    await assert.rejects(e.verifyReplica(3, SOURCE, TARGET.master), (err) => isShardKitError(err, 'INVALID_CONFIG') && /PG002A is not a standby/.test(err.message));
    await assert.rejects(e.verifyReplica(3, SOURCE, TARGET.slave), (err) => isShardKitError(err, 'INVALID_CONFIG') && /PG002B is not a standby of PG001A \(system identifier/.test(err.message));
  });

  /** A shard the source still masters (earlier tests moved some), not frozen. */
  const onSource = async (): Promise<number> => {
    const s = store();
    const map = (await s.read())!;
    for (let shard = 7; shard >= 0; shard--) if (map.locate(shard).master === SOURCE && map.moves().every((m) => shard < m.range[0] || shard > m.range[1])) return shard;
    throw new Error('no shard left on the source');
  };

  test('vitess#6951 before the freeze: a row changed by hand on the target after the copy makes the move abort with nothing frozen; the range is back on the source, nothing left behind', async () => {
    const shard = await onSource();
    const before = await ids(SOURCE, db(shard));
    const events: MoveEvent[] = [];
    const s = store();
    await assert.rejects(
      runMove({
        store: s, engine: engine(), hosts: hosts(), start: { span: { first: shard, last: shard }, target: TARGET },
        onEvent: (e) => events.push(e),
        afterPhase: async (phase) => {
          if (phase === 'copied') await sql(TARGET.master, `UPDATE ${db(shard)}.pins SET data = '{"by":"hand"}' WHERE local_id = (SELECT min(local_id) FROM ${db(shard)}.pins)`);
        },
      }),
      (err) => isShardKitError(err) && /verify found 1 mismatching chunk/.test(err.message) && new RegExp(`shard ${shard} pins`).test(err.message) && /back on PG001A/.test(err.message),
    );
    assert.deepEqual(events.filter((e) => e.phase === 'frozen' || e.phase === 'fenced'), [], 'never frozen, never fenced');
    const map = (await s.read())!;
    assert.deepEqual(map.moves().filter((m) => m.range[0] <= shard && shard <= m.range[1]), [], 'no move of the shard left (its freeze lifted)');
    assert.equal(map.locate(shard).master, SOURCE);
    assert.deepEqual(await ids(SOURCE, db(shard)), before);
    assert.deepEqual(await ids(SOURCE, `${db(shard)}_moved`), []);
    assert.deepEqual(await ids(TARGET.master, db(shard)), []);
    assert.deepEqual(await replicationLeft(), []);
  });

  test('a resumed mover compares in full under the freeze: a row changed by hand on the target while the mover was gone is found, and the range goes back to the source', async () => {
    const shard = await onSource();
    const before = await ids(SOURCE, db(shard));
    const s = store();
    let moveId: string | undefined;
    let dead!: () => void;
    const stopped = new Promise<void>((r) => (dead = r));
    // The first mover stops for good right after recording the fence (as if killed there).
    void runMove({
      store: s, engine: engine(), hosts: hosts(), start: { span: { first: shard, last: shard }, target: TARGET, holdMs: 60_000 },
      onEvent: (e) => (moveId ??= e.moveId),
      afterPhase: (phase) => (phase === 'fenced' ? (dead(), new Promise<void>(() => {})) : undefined),
    });
    await stopped;
    await sql(TARGET.master, `UPDATE ${db(shard)}.pins SET data = '{"by":"hand"}' WHERE local_id = (SELECT max(local_id) FROM ${db(shard)}.pins)`);
    await assert.rejects(
      runMove({ store: store(), engine: engine(), hosts: hosts(), moveId: moveId! }),
      (err) => isShardKitError(err) && /verify found 1 mismatching chunk/.test(err.message) && new RegExp(`shard ${shard} pins`).test(err.message) && /back on PG001A/.test(err.message),
    );
    const map = (await s.read())!;
    assert.deepEqual(map.moves().filter((m) => m.range[0] <= shard && shard <= m.range[1]), [], 'no move of the shard left (its freeze lifted)');
    assert.equal(map.locate(shard).master, SOURCE);
    assert.deepEqual(await ids(SOURCE, db(shard)), before);
    assert.deepEqual(await ids(TARGET.master, db(shard)), []);
  });

  test('settleTables on two servers: equal tables settle, a table written during every round stays unsettled (left for the freeze), a table that differs while the source holds still is reported', async () => {
    for (const h of [SOURCE, TARGET.master]) {
      await sql(h, 'DROP SCHEMA IF EXISTS settle_scratch CASCADE');
      await sql(h, 'CREATE SCHEMA settle_scratch');
      for (const t of ['quiet', 'busy', 'changed']) {
        await sql(h, `CREATE TABLE settle_scratch.${t} (id bigint PRIMARY KEY, v text NOT NULL)`);
        await sql(h, `INSERT INTO settle_scratch.${t} SELECT g, 'row ' || g FROM generate_series(1, 50) g`);
      }
    }
    await sql(TARGET.master, "UPDATE settle_scratch.changed SET v = 'by hand' WHERE id = 7");
    const a = await client(SOURCE);
    const b = await client(TARGET.master);
    try {
      const tables = ['quiet', 'busy', 'changed'].map((t) => ({ name: t, a: `settle_scratch.${t}`, b: `settle_scratch.${t}` }));
      // Each sync is a write on the source's busy table that the "replica" has applied by the time sync returns.
      let n = 100;
      const writeBusy = async () => {
        n++;
        for (const x of [a, b]) await x.query(`INSERT INTO settle_scratch.busy VALUES (${n}, 'live')`);
      };
      let syncs = 0;
      const busy = await settleTables(a, b, tables, () => (syncs++, writeBusy()), 3);
      assert.deepEqual([...busy.equal.keys()], ['quiet']);
      assert.equal(busy.equal.get('quiet')!.rows, 50);
      assert.deepEqual(busy.differ, ['changed']);
      assert.deepEqual(busy.unsettled, ['busy']);
      // The second round settled nothing: no third (each round reads the tables whole, on both sides).
      assert.equal(syncs, 2);
      // Only tables written throughout (every shard's table under a running service): one round
      // reads them whole, then they go to the chunk settle. Six rounds read them six times over
      // before (24 s of a 50 s move of 1M rows in bench/moves-scale-postgres).
      syncs = 0;
      const hot = await settleTables(a, b, tables.filter((t) => t.name === 'busy'), () => (syncs++, writeBusy()), 6);
      assert.deepEqual(hot.unsettled, ['busy']);
      assert.equal(syncs, 1);
      // The writes stop after the first round: busy settles in the second.
      let first = true;
      const once = await settleTables(a, b, tables, async () => {
        if (first) await writeBusy();
        first = false;
      }, 3);
      assert.deepEqual([...once.equal.keys()].sort(), ['busy', 'quiet']);
      assert.deepEqual(once.unsettled, []);
      // A table known to be written lately (its counters moved since prepare) is not read whole:
      // left for the chunk settle at once, while the others settle in one round.
      syncs = 0;
      const known = await settleTables(a, b, tables, () => (syncs++, writeBusy()), 6, undefined, new Set(['busy']));
      assert.deepEqual([...known.equal.keys()], ['quiet']);
      assert.deepEqual(known.differ, ['changed']);
      assert.deepEqual(known.unsettled, ['busy']);
      assert.equal(syncs, 1);
      syncs = 0;
      const onlyKnown = await settleTables(a, b, tables.filter((t) => t.name === 'busy'), () => (syncs++, writeBusy()), 6, undefined, new Set(['busy']));
      assert.deepEqual(onlyKnown.unsettled, ['busy']);
      assert.equal(syncs, 0);
      // The counters that name such tables: a write published (pg_stat_force_next_flush: the
      // session reports its counters before it answers again) moves only its own table's.
      const written0 = await tableWrites(a, ['settle_scratch']);
      assert.deepEqual([...written0.keys()].sort(), ['settle_scratch.busy', 'settle_scratch.changed', 'settle_scratch.quiet']);
      const w = await client(SOURCE);
      try {
        await w.query("INSERT INTO settle_scratch.busy VALUES (100000, 'counted')");
        await w.query('SELECT pg_stat_force_next_flush()');
        await w.query('SELECT 1');
      } finally {
        await w.end();
      }
      assert.deepEqual([...writtenBetween(written0, await tableWrites(a, ['settle_scratch']))], ['settle_scratch.busy']);
    } finally {
      await a.end();
      await b.end();
      for (const h of [SOURCE, TARGET.master]) await sql(h, 'DROP SCHEMA IF EXISTS settle_scratch CASCADE');
    }
  });

  test('the chunk comparison on two servers names a changed, a missing and an extra row, chunk by chunk; a difference the sync resolves is rechecked away', async () => {
    // 2.5 chunks of rows in a scratch table on each server, equal to begin with.
    const n = Math.floor(CHUNK_ROWS * 2.5);
    for (const h of [SOURCE, TARGET.master]) {
      await sql(h, 'DROP SCHEMA IF EXISTS verify_scratch CASCADE');
      await sql(h, 'CREATE SCHEMA verify_scratch');
      await sql(h, 'CREATE TABLE verify_scratch.t (id bigint PRIMARY KEY, v text NOT NULL)');
      await sql(h, `INSERT INTO verify_scratch.t SELECT g, 'row ' || g FROM generate_series(1, ${n}) g`);
    }
    const a = await client(SOURCE);
    const b = await client(TARGET.master);
    try {
      const sides = [{ c: a, table: 'verify_scratch.t' }, { c: b, table: 'verify_scratch.t' }] as const;
      const same = await compareChunks(9, 't', sides[0], sides[1]);
      assert.deepEqual(same.mismatches, []);
      assert.equal(same.rows, n);
      assert.equal(same.chunks, 3);

      await sql(TARGET.master, "UPDATE verify_scratch.t SET v = 'by hand' WHERE id = 1500");
      await sql(TARGET.master, 'DELETE FROM verify_scratch.t WHERE id = 2100');
      await sql(TARGET.master, `INSERT INTO verify_scratch.t VALUES (${n + 7}, 'extra')`);
      let syncs = 0;
      const found = await compareChunks(9, 't', sides[0], sides[1], async () => {
        syncs++;
      });
      assert.deepEqual(found.mismatches.map((x) => [x.fromKey, x.toKey, x.sourceRows, x.targetRows]), [
        ['1500', '1500', CHUNK_ROWS, CHUNK_ROWS],
        ['2100', String(n + 7), n - 2 * CHUNK_ROWS, n - 2 * CHUNK_ROWS],
      ]);
      assert.ok(syncs >= 3, `the other side is read after a sync, per chunk (${syncs} syncs)`);

      // A change the master made before its chunk was read, which the copy applies only by the
      // time sync returns (as a standby replaying): the chunk matches at that point.
      await sql(SOURCE, "UPDATE verify_scratch.t SET v = 'newer' WHERE id = 10");
      let pending = true;
      const caughtUp = await compareChunks(9, 't', { c: a, table: 'verify_scratch.t' }, { c: b, table: 'verify_scratch.t' }, async () => {
        if (pending) await b.query("UPDATE verify_scratch.t SET v = 'newer' WHERE id = 10");
        pending = false;
      });
      assert.deepEqual(caughtUp.mismatches.map((x) => x.fromKey), ['1500', '2100']);
    } finally {
      await a.end();
      await b.end();
      for (const h of [SOURCE, TARGET.master]) await sql(h, 'DROP SCHEMA IF EXISTS verify_scratch CASCADE');
    }
  });

  test('before the freeze (confirm): a target read between two writes of a row (a pin added and removed again: on the target for three reads, never in the source\'s reads around them) is unconfirmed, not a mismatch; a row changed for good is named', async () => {
    for (const h of [SOURCE, TARGET.master]) {
      await sql(h, 'DROP SCHEMA IF EXISTS confirm_scratch CASCADE');
      await sql(h, 'CREATE SCHEMA confirm_scratch');
      await sql(h, 'CREATE TABLE confirm_scratch.t (id bigint PRIMARY KEY, v text NOT NULL)');
      await sql(h, "INSERT INTO confirm_scratch.t SELECT g, 'row ' || g FROM generate_series(1, 50) g");
    }
    const a = await client(SOURCE);
    const b = await client(TARGET.master);
    try {
      const sides = [{ c: a, table: 'confirm_scratch.t' }, { c: b, table: 'confirm_scratch.t' }] as const;
      // The "replica" holds row 999 after the first three syncs and not after the later ones: what
      // a live subscription shows when the source adds a row and removes it again between reads.
      let syncs = 0;
      const transient = async () => {
        syncs++;
        if (syncs === 1) await b.query("INSERT INTO confirm_scratch.t VALUES (999, 'in between')");
        if (syncs === 4) await b.query('DELETE FROM confirm_scratch.t WHERE id = 999');
      };
      const caught = await compareChunks(3, 't', sides[0], sides[1], transient, { confirm: 5 });
      assert.deepEqual(caught.mismatches, [], 'a difference that did not hold is no mismatch');
      assert.equal(caught.unconfirmed, 1, 'it is left for the comparison under the freeze');
      assert.ok(syncs >= 4, `read again after the row went (${syncs} syncs)`);

      await sql(TARGET.master, "UPDATE confirm_scratch.t SET v = 'by hand' WHERE id = 7");
      const changed = await compareChunks(3, 't', sides[0], sides[1], async () => undefined, { confirm: 5 });
      assert.deepEqual(changed.mismatches.map((x) => [x.fromKey, x.toKey]), [['7', '7']]);
      assert.equal(changed.unconfirmed, 0);
    } finally {
      await a.end();
      await b.end();
      for (const h of [SOURCE, TARGET.master]) await sql(h, 'DROP SCHEMA IF EXISTS confirm_scratch CASCADE');
    }
  });
});
