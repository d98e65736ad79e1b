/** The dashboard shows frozen ranges and the moves in progress, in a real browser (as test/dashboard does). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';
import { listeningApp } from '../http/http-fixture.js';
import { addMove, advanceMove, casMoveState, freezeMove } from '../../src/moves/move-state.js';
import { runMove } from '../../src/moves/move-runner.js';
import type { MoveEngine } from '../../src/moves/move-engine.js';
import { createSqliteMoveEngine } from '../../src/moves/sqlite/index.js';
import { isShardKitError, ShardKitError } from '../../src/errors.js';

const CHROMIUM = process.env.SHARDKIT_CHROMIUM ?? '/usr/bin/chromium';

const launch = () => chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'] });

test('the dashboard shows a frozen range and the move holding it (phase, whether writes are held)', async () => {
  const f = await listeningApp();
  const browser = await launch();
  try {
    const page = await browser.newPage();
    const problems: string[] = [];
    page.on('pageerror', (err) => problems.push(err.message));
    await page.goto(`${f.base}/dashboard/`);
    await page.waitForSelector('#status[data-state="ok"]');
    assert.equal(await page.locator('#moves-panel').isVisible(), false, 'no moves: no panel');

    await f.kit.ready();
    await casMoveState(f.topology, (m) => addMove(m, { id: 'move-dash', span: { first: 0, last: 3 }, target: { master: 'MySQL002A', slave: 'MySQL002B' }, holdMs: 60_000 }));
    await casMoveState(f.topology, (m) => advanceMove(m, 'move-dash', ['started'], 'copied'));
    await casMoveState(f.topology, (m) => freezeMove(m, 'move-dash'));
    const api = (await (await fetch(`${f.base}/v1/topology`)).json()) as { ranges: Array<{ frozen?: { id: string } }>; moves: Array<{ id: string; phase: string }> };
    assert.equal(api.ranges[0]!.frozen?.id, 'move-dash', 'GET /v1/topology carries the freeze');
    assert.deepEqual(api.moves.map((m) => [m.id, m.phase]), [['move-dash', 'frozen']]);

    await page.reload();
    await page.waitForSelector('#moves-panel:not([hidden])');
    const first = await page.locator('#topology tbody tr').first().innerText();
    assert.match(first, /0–3[\s\S]*MySQL001A[\s\S]*open · frozen by move-dash/);
    const row = await page.locator('#moves tbody tr').first().innerText();
    // No progress reported yet for this phase: dashes.
    assert.match(row, /move-dash\s+0–3\s+MySQL001A\s+MySQL002A\s+frozen\s+–\s+–\s+–\s+held \(budget 60000 ms\)/);
    assert.deepEqual(problems, []);
  } finally {
    await browser.close();
    await f.cleanup();
  }
});

test('a move in progress shows its phase, progress and lag beside its frozen range, as the mover writes them', { timeout: 180_000 }, async () => {
  const f = await listeningApp();
  const browser = await launch();
  let release: () => void = () => {};
  const gate = new Promise<void>((resolve) => (release = resolve));
  let releaseVerify: () => void = () => {};
  const verifyGate = new Promise<void>((resolve) => (releaseVerify = resolve));
  const page = await browser.newPage();
  try {
    for (let s = 0; s <= 3; s++) await f.kit.objects.create('pin', { s }, { shard: s });
    // A real SQLite move, held in its verify before the freeze (phase copied, as a replicating
    // engine verifies: 10 of 40 tables done) and after its catch-up (phase fenced) until the test lets it go on.
    const sqlite = createSqliteMoveEngine({ shardPath: (host, shard) => f.backend.shardPath({ host, shard, fleet: 'objects' }) });
    const engine: MoveEngine = Object.assign(Object.create(sqlite) as MoveEngine, {
      verifyBeforeFreeze: async (m: Parameters<MoveEngine['verify']>[0], onVerify?: (done: number, total: number) => void) => {
        onVerify?.(10, 40);
        await verifyGate;
        return { shards: 4, tables: 40, rows: 0, chunks: 0, mismatches: [] };
      },
      catchUp: async (m: Parameters<MoveEngine['catchUp']>[0], onProgress?: (done: number, total: number) => void) => {
        await sqlite.catchUp(m, onProgress);
        await gate;
      },
    });
    const running = runMove({ store: f.topology, engine, start: { span: { first: 0, last: 3 }, target: { master: 'MySQL002A', slave: 'MySQL002B' }, id: 'move-live', holdMs: 60_000 } });
    // The verify before the freeze (#28: the dashboard showed nothing here): its step and its tables.
    // Bounded only so that a broken build fails here instead of polling past the test's timeout.
    for (let tries = 0; ; tries++) {
      if (tries > 1500) throw new Error('the move never showed the state this loop waits for');
      const map = (await (await fetch(`${f.base}/v1/topology`)).json()) as { moves?: Array<{ id: string; phase: string; progress?: { phase: string; verifiedTables?: number } }> };
      const live = map.moves?.find((m) => m.id === 'move-live');
      if (live?.phase === 'copied' && live.progress?.phase === 'copied' && live.progress.verifiedTables === 10) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    await page.goto(`${f.base}/dashboard/`);
    await page.waitForSelector('#moves tbody tr[data-move="move-live"]');
    assert.match(await page.locator('#moves tbody tr[data-move="move-live"]').innerText(), /^move-live\s+0–3\s+MySQL001A\s+MySQL002A\s+verifying before the freeze\s+verified 10\/40 tables \(25%\)\s+–\s+\d+ s ago\s+–$/);
    releaseVerify();
    // Another move, its record written as an engine with replication reports it: rows, rate, ETA,
    // the tables its copy streams are on (#29 item 6), and lag.
    await casMoveState(f.topology, (m) => addMove(m, { id: 'move-rows', span: { first: 8, last: 11 }, target: { master: 'MySQL001A', slave: 'MySQL001B' } }));
    await f.topology.progress!.put('move-rows', {
      phase: 'started', rowsCopied: 1500, rowsTotal: 6000, rowsPerSecond: 750, etaSeconds: 6, lag: 3, at: Date.now(),
      tables: [{ table: 'shard_0008.pins', rowsCopied: 1000, bytesCopied: 65_536 }, { table: 'shard_0009.boards', rowsCopied: 500, bytesCopied: 2048 }],
    });

    // The mover's progress reaches its record (throttled to once a second): wait for its last numbers.
    // Bounded only so that a broken build fails here instead of polling past the test's timeout.
    for (let tries = 0; ; tries++) {
      if (tries > 1500) throw new Error('the move never showed the state this loop waits for');
      const map = (await (await fetch(`${f.base}/v1/topology`)).json()) as { moves?: Array<{ id: string; phase: string; progress?: { phase: string; shardsDone?: number } }> };
      const live = map.moves?.find((m) => m.id === 'move-live');
      if (live?.phase === 'fenced' && live.progress?.phase === 'fenced' && live.progress.shardsDone === 4) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const problems: string[] = [];
    page.on('pageerror', (err) => problems.push(err.message));
    await page.reload();
    await page.waitForSelector('#moves tbody tr[data-move="move-live"]');
    const live = await page.locator('#moves tbody tr[data-move="move-live"]').innerText();
    assert.match(live, /^move-live\s+0–3\s+MySQL001A\s+MySQL002A\s+fenced: catching up\s+4\/4 shards \(100%\)\s+–\s+\d+ s ago\s+held \(budget 60000 ms\)$/);
    const rows = await page.locator('#moves tbody tr[data-move="move-rows"]').innerText();
    assert.match(rows, /^move-rows\s+8–11\s+MySQL002A\s+MySQL001A\s+copying\s+1,500\/6,000 rows \(25%\), 750 rows\/s, ETA 6 s\s+shard_0008\.pins: 1,000 rows, 64\.0 KiB\s+shard_0009\.boards: 500 rows, 2\.0 KiB\s+3\s+\d+ s ago\s+–$/);
    // Beside the frozen range: the topology row and the heat map's range say which move holds it.
    assert.match(await page.locator('#topology tbody tr').first().innerText(), /0–3[\s\S]*frozen by move-live/);
    await page.waitForSelector('#heatmap .heat-range[data-range="0-3"]');
    assert.match(await page.locator('#heatmap .heat-range[data-range="0-3"] .heat-range-label').innerText(), /frozen by move-live/);

    release();
    const result = await running;
    assert.equal(result.outcome, 'switched');
    await page.reload();
    await page.waitForSelector('#moves tbody tr[data-move="move-live"]');
    assert.match(await page.locator('#moves tbody tr[data-move="move-live"]').innerText(), /^move-live\s+0–3\s+MySQL001A\s+MySQL002A\s+switched\s+–\s+–\s+–\s+–$/);
    assert.deepEqual(problems, []);
  } finally {
    release();
    releaseVerify();
    await browser.close();
    await f.cleanup();
  }
});

test('an aborting move shows why, as text, on the dashboard and in GET /v1/topology; --abort says the operator did it', { timeout: 180_000 }, async () => {
  const f = await listeningApp();
  const browser = await launch();
  let release: () => void = () => {};
  const gate = new Promise<void>((resolve) => (release = resolve));
  try {
    for (let s = 0; s <= 3; s++) await f.kit.objects.create('pin', { s }, { shard: s });
    // A real SQLite move whose catch-up fails; its undo waits for the test, so the abort can be watched.
    const sqlite = createSqliteMoveEngine({ shardPath: (host, shard) => f.backend.shardPath({ host, shard, fleet: 'objects' }) });
    const engine: MoveEngine = Object.assign(Object.create(sqlite) as MoveEngine, {
      catchUp: async () => {
        throw new ShardKitError('SHARD_UNAVAILABLE', 'the target <b>MySQL002A</b> went away during the catch-up');
      },
      undo: async (m: Parameters<MoveEngine['undo']>[0]) => {
        await gate;
        await sqlite.undo(m);
      },
    });
    const running = runMove({ store: f.topology, engine, start: { span: { first: 0, last: 3 }, target: { master: 'MySQL002A', slave: 'MySQL002B' }, id: 'move-bad', holdMs: 60_000 } });
    running.catch(() => undefined);
    // Bounded only so that a broken build fails here instead of polling past the test's timeout.
    for (let tries = 0; ; tries++) {
      if (tries > 1500) throw new Error('the move never showed the state this loop waits for');
      const map = (await (await fetch(`${f.base}/v1/topology`)).json()) as { moves?: Array<{ id: string; phase: string; detail?: Record<string, unknown> }> };
      const m = map.moves?.find((x) => x.id === 'move-bad');
      if (m?.phase === 'aborting') {
        assert.equal(m.detail?.abortReason, 'the target <b>MySQL002A</b> went away during the catch-up');
        break;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    const page = await browser.newPage();
    const problems: string[] = [];
    page.on('pageerror', (err) => problems.push(err.message));
    await page.goto(`${f.base}/dashboard/`);
    await page.waitForSelector('#moves tbody tr[data-move="move-bad"]');
    assert.match(await page.locator('#moves tbody tr[data-move="move-bad"]').innerText(), /^move-bad\s+0–3\s+MySQL001A\s+MySQL002A\s+aborting: the target <b>MySQL002A<\/b> went away during the catch-up\s/);
    assert.equal(await page.locator('#moves b').count(), 0, 'the reason is text, not markup');
    release();
    await assert.rejects(running, (err) => isShardKitError(err, 'SHARD_UNAVAILABLE') && /back on MySQL001A/.test(err.message));

    // An operator's --abort of a move left behind by a mover that died.
    await casMoveState(f.topology, (m) => addMove(m, { id: 'move-left', span: { first: 8, last: 9 }, target: { master: 'MySQL001A', slave: 'MySQL001B' } }));
    const phases: Array<Record<string, unknown> | undefined> = [];
    const watcher = f.topology.watch((m) => phases.push(m.move('move-left')?.detail));
    const aborted = await runMove({ store: f.topology, engine: sqlite, moveId: 'move-left', abort: true });
    watcher();
    assert.equal(aborted.outcome, 'aborted');
    assert.ok(phases.some((d) => d?.abortReason === 'aborted by the operator (--abort)'), JSON.stringify(phases));
    assert.deepEqual(problems, []);
  } finally {
    release();
    await browser.close();
    await f.cleanup();
  }
});
