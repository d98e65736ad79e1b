/**
 * `shards move --abort` and `--resume` of a move carrying MyRocks wide-column shards (issues
 * #17/#19), on a real dev cluster (2 pairs, object and mod shards 0..3 on MySQL001A, 4..7 on
 * MySQL002A, MyRocks loaded) with two real `shardkit serve` processes following the store. Writers
 * send Batch Put Row (3 rows on one wide-column shard of 4..7) over HTTP and keep a ledger of the
 * acknowledged batches. The CLI mover of shards 6..7 is killed (-9) right after the fence, twice:
 * - `--abort` after the first kill: every acknowledged cell is on the source and read back
 *   through the services, the target holds no wcNNNNN table of 6..7, the fenced copies are back;
 * - `--resume` after the second: every acknowledged cell (before, between and after) is on the
 *   target, the source has no live wcNNNNN table of 6..7 left.
 * Steps are bounded by acknowledgments and by the mover's own output, never by time.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { myrocksDevExtension } from '../../src/cli/actions/widecolumn-myrocks-dev.js';
import { modShard } from '../../src/ids/mod-shard.js';
import { startTestCluster } from '../mysql/cluster-fixture.js';
import { CLI, cliProcess as cli, ensureBuilt } from '../cli/cli-harness.js';
import { killMoverAfter } from './kill-mover.js';
import { startService, type Service } from '../failover/serve-fixture.js';
import { checkBatches, newWcLedger, wcAckedAfter, wcWriteLoad, type WcBatch } from '../failover/wc-ledger.js';

const SOURCE = 'MySQL002A';
const TARGET = 'MySQL001A';
const DATASET = 'events';
const WC_SHARDS = 8;
const MOVING = [6, 7];
const wc = (s: number) => `wc${String(s).padStart(5, '0')}`;

describe('shards move --abort and --resume after kill -9 of the mover, with MyRocks wide-column data under load (real mariadbd)', () => {
  let fx: Awaited<ReturnType<typeof startTestCluster>>;
  let args: string[];
  const services: Service[] = [];
  const urls = () => services.map((s) => s.url);
  const query = <T>(host: string, sql: string, values: unknown[] = []): Promise<T[]> => fx.cluster.instance(host).admin<T[]>({ sql, values });
  const tablesIn = async (host: string, database: string): Promise<string[]> =>
    (await query<{ t: string }>(host, 'SELECT TABLE_NAME AS t FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? ORDER BY TABLE_NAME', [database])).map((r) => r.t);
  /** Cells (not head records) of `database`.events on `host`, as `row/col/value`. */
  const cells = async (host: string, database: string): Promise<Set<string>> =>
    new Set((await query<{ k: string }>(host, `SELECT CONCAT(CAST(row_key AS CHAR), '/', CAST(col AS CHAR), '/', CAST(v AS CHAR)) AS k FROM \`${database}\`.\`${DATASET}\` WHERE nts <= 0`)).map((r) => r.k));
  /** Acknowledged cells of the moving shards missing from `host`'s wcNNNNN tables. */
  const missingOn = async (host: string, batches: readonly WcBatch[]): Promise<string[]> => {
    const there = new Map<number, Set<string>>();
    for (const s of MOVING) there.set(s, await cells(host, wc(s)));
    const out: string[] = [];
    for (const b of batches.filter((x) => x.acked)) {
      const s = modShard(b.rows[0]!, WC_SHARDS);
      if (!MOVING.includes(s)) continue;
      for (const row of b.rows) for (const col of ['c', 'd']) if (!there.get(s)!.has(`${row}/${col}/${b.value}`)) out.push(`${row}/${col}/${b.value}`);
    }
    return out;
  };

  before(async () => {
    fx = await startTestCluster({ pairs: 2, shards: 8, modShards: WC_SHARDS, extensions: [myrocksDevExtension()], prefix: 'shardkit-wcresume-' });
    ensureBuilt();
    args = ['--config', fx.cluster.configPath, '--data', fx.dir];
    for (let i = 0; i < 2; i++) services.push(await startService(fx.cluster.configPath, fx.dir, { widecolumn: true }));
    const res = await fetch(`${services[0]!.url}/v1/datasets/${DATASET}`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ maxVersions: 3 }) });
    assert.ok(res.status === 201 || res.status === 200, await res.text());
  });
  after(async () => {
    await Promise.all(services.map((s) => s.stop()));
    await fx?.stop();
  });

  /** Starts the CLI mover of 6..7, which stops itself right after the fence; kills it with SIGKILL there. */
  const killAfterFence = async (): Promise<void> => {
    await killMoverAfter('fenced', ['6..7', '--to', TARGET, '--to-slave', 'MySQL001B', '--hold-ms', '30000', '--json', ...args]);
    // The mover held the lock fence (LOCK TABLES, nothing renamed yet): the locks died with it, so
    // the wide-column tables of 6..7 are live on the source again, nothing renamed aside.
    for (const s of MOVING) {
      assert.deepEqual(await tablesIn(SOURCE, wc(s)), [DATASET], `${wc(s)} live on the source again`);
      assert.deepEqual(await tablesIn(SOURCE, `${wc(s)}_moved`), []);
    }
  };

  test('kill -9 after the fence, --abort: the cells are all on the source and served; a second kill, --resume: all on the target; 0 acknowledged lost', async (t) => {
    const ledger = newWcLedger();
    const snapshot = (): WcBatch[] => ledger.batches.map((b) => ({ ...b }));
    let release!: () => void;
    const running = wcWriteLoad(urls, DATASET, WC_SHARDS, new Promise<void>((r) => (release = r)), { ledger, onShards: [4, 5, 6, 7] });
    let abortedAt = 0;
    let resumedAt = 0;
    try {
      await wcAckedAfter(ledger, 0);

      await killAfterFence();
      const aborted = await cli(['shards', 'move', '6..7', '--abort', '--json', ...args]);
      assert.equal(aborted.code, 0, aborted.stderr);
      assert.equal((JSON.parse(aborted.stdout.trim().split('\n').at(-1)!) as { outcome: string }).outcome, 'aborted');
      abortedAt = Date.now();
      await wcAckedAfter(ledger, abortedAt);
      for (const s of MOVING) {
        assert.deepEqual(await tablesIn(SOURCE, wc(s)), [DATASET], `${wc(s)} is live on the source again`);
        assert.deepEqual(await tablesIn(SOURCE, `${wc(s)}_moved`), []);
        assert.deepEqual(await tablesIn(TARGET, wc(s)), [], `no copy of ${wc(s)} left on the target`);
      }
      // The writers go on: check a copy of the ledger taken now (the batches in flight may be acknowledged meanwhile).
      const sofar = snapshot();
      assert.deepEqual(await missingOn(SOURCE, sofar), [], 'every acknowledged cell of 6..7 is on the source after --abort');
      const served = await checkBatches(urls()[1]!, DATASET, sofar);
      assert.deepEqual(served.lost, []);
      assert.deepEqual(served.torn, []);

      await killAfterFence();
      const resumed = await cli(['shards', 'move', '6..7', '--resume', '--json', ...args]);
      assert.equal(resumed.code, 0, resumed.stderr);
      assert.equal((JSON.parse(resumed.stdout.trim().split('\n').at(-1)!) as { outcome: string }).outcome, 'switched');
      resumedAt = Date.now();
      await wcAckedAfter(ledger, resumedAt);
      // Past the writes the services held across the switch: one more acknowledged on each moving shard.
      for (const s of MOVING) {
        const since = Date.now();
        while (!ledger.batches.some((b) => b.acked && b.at > since && modShard(b.rows[0]!, WC_SHARDS) === s)) await new Promise((r) => setTimeout(r, 20));
      }
    } finally {
      release();
      await running;
    }
    for (const s of MOVING) assert.deepEqual(await tablesIn(SOURCE, wc(s)), [], `${wc(s)} has no live table on the source`);
    assert.deepEqual(await missingOn(TARGET, ledger.batches), [], 'every acknowledged cell of 6..7 (before the abort, between, after the resume) is on the target');
    const check = await checkBatches(urls()[0]!, DATASET, ledger.batches);
    assert.deepEqual(check.lost, []);
    assert.deepEqual(check.torn, []);
    const onMoving = ledger.batches.filter((b) => b.acked && MOVING.includes(modShard(b.rows[0]!, WC_SHARDS)));
    t.diagnostic(`${check.acked} acknowledged batches (${onMoving.length} on shards 6..7; ${onMoving.filter((b) => b.at > abortedAt && b.at < resumedAt).length} between --abort and --resume), 0 lost; writer errors ${JSON.stringify([...ledger.errors].map(([k, n]) => [k.slice(0, 90), n]))}`);
  });
});
