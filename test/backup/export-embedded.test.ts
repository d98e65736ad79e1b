import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultConfig } from '../../src/config/config.js';
import type { KitObject } from '../../src/kit/kit-object.js';
import { ShardKit } from '../../src/kit/shard-kit.js';
import { isShardKitError } from '../../src/errors.js';
import { exportShards } from '../../src/ops/backup/index.js';
import { createTopologyStore } from '../../src/topology/index.js';
import { ShardMap } from '../../src/topology/shard-map.js';
import { assertBadInput, cli } from '../cli/cli-harness.js';
import { assertObjectsExported, duckdb, parquetFiles, readExport } from './export-helpers.js';
import { until } from './backup-helpers.js';

const PIN_SCHEMA = { type: 'object', properties: { title: { type: 'string' }, n: { type: 'integer' }, score: { type: 'number' }, pinned: { type: ['boolean', 'null'] }, tags: { type: 'array' } } };

describe('shardkit export on the embedded default (SQLite shard files)', () => {
  let dir: string;
  let out: string;
  let kit: ShardKit;
  const written: Array<{ obj: KitObject; deleted?: boolean }> = [];
  let since = 0;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'shardkit-export-emb-'));
    out = mkdtempSync(join(tmpdir(), 'shardkit-export-emb-out-'));
    const config = defaultConfig({ shards: 8, pairs: 2 }) as { schema: { types: Array<{ name: string; dataSchema?: object }> } };
    config.schema.types.find((t) => t.name === 'pin')!.dataSchema = PIN_SCHEMA;
    writeFileSync(join(dir, 'shardkit.json'), JSON.stringify(config));
    kit = await ShardKit.open({ configPath: join(dir, 'shardkit.json'), dataDir: dir });
    for (let i = 0; i < 60; i++) {
      const data = i % 3 === 0 ? { title: `pin ${i}`, n: i, score: i / 4, pinned: i % 2 === 0, tags: ['a'] } : { title: `pin ${i}`, note: 'é ✓' };
      written.push({ obj: await kit.objects.create('pin', data, { shard: i % 5 }) });
    }
    await kit.objects.delete(written[7]!.obj.id);
    written[7]!.deleted = true;
  });
  after(async () => {
    await kit.close();
    rmSync(dir, { recursive: true, force: true });
    rmSync(out, { recursive: true, force: true });
  });

  test('every pin written through the kit is in its shard\'s file once, with typed columns hyparquet and DuckDB read', async () => {
    const r = await cli(['export', 'objects', '--data', dir, '--type', 'pin', '--to', join(out, 'full'), '--json']);
    assert.equal(r.code, 0, r.stderr);
    const report = JSON.parse(r.stdout) as { rows: number; written: number; shards: number; engine: string };
    assert.deepEqual([report.engine, report.rows, report.written, report.shards], ['sqlite', 60, 5, 8], 'five shards hold pins: five files');
    const rows = await readExport(join(out, 'full', 'pin'));
    assertObjectsExported(rows, written, 'pin');
    const withFields = rows.find((x) => x.id === written[3]!.obj.id)!;
    assert.deepEqual([withFields.data_title, withFields.data_n, withFields.data_score, withFields.data_pinned], ['pin 3', 3n, 0.75, false], 'declared fields flattened, typed');
    assert.equal('data_tags' in withFields, false, 'an array field stays in data only');
    const plain = rows.find((x) => x.id === written[1]!.obj.id)!;
    assert.deepEqual([plain.data_title, plain.data_n], ['pin 1', null], 'a field the data lacks is null');

    const db = await duckdb();
    try {
      const glob = join(out, 'full', 'pin', '*.parquet');
      const [[count, distinct, deleted, sumN]] = (await db.all(`SELECT count(*), count(DISTINCT id), count(*) FILTER (WHERE deleted), sum(data_n) FROM '${glob}'`)) as [[bigint, bigint, bigint, bigint | number]];
      assert.deepEqual([count, distinct, deleted], [60n, 60n, 1n]);
      assert.equal(Number(sumN), written.filter((w, i) => i % 3 === 0).reduce((n, w) => n + (w.obj.data as { n: number }).n, 0));
      const types = Object.fromEntries((await db.all(`DESCRIBE SELECT * FROM '${glob}'`)).map((c) => [c[0], c[1]]));
      assert.deepEqual([types.id, types.created_at, types.deleted, types.data, types.data_n, types.data_score], ['BIGINT', 'TIMESTAMP', 'BOOLEAN', 'VARCHAR', 'BIGINT', 'DOUBLE']);
      const [[title]] = (await db.all(`SELECT json_extract_string(data, '$.title') FROM '${glob}' WHERE id = ${written[10]!.obj.id}`)) as [[string]];
      assert.equal(title, 'pin 10', 'the data column is JSON text DuckDB parses');
    } finally {
      db.close();
    }
  });

  test('a re-run skips the complete files and writes nothing again', async () => {
    const first = readdirSync(join(out, 'full', 'pin'));
    const r = await cli(['export', 'objects', '--data', dir, '--type', 'pin', '--to', join(out, 'full'), '--json']);
    assert.equal(r.code, 0, r.stderr);
    const report = JSON.parse(r.stdout) as { written: number; skipped: number; rows: number };
    assert.deepEqual([report.written, report.skipped, report.rows], [0, 5, 0]);
    assert.deepEqual(readdirSync(join(out, 'full', 'pin')), first);
  });

  test('--since exports only the objects created at or after it', async () => {
    const newest = Math.max(...written.map((w) => w.obj.createdAt.getTime()));
    since = newest + 1;
    await until('the clock past the first batch', () => Date.now() > since);
    const later: Array<{ obj: KitObject }> = [];
    for (let i = 0; i < 12; i++) later.push({ obj: await kit.objects.create('pin', { title: `later ${i}`, n: 1000 + i }, { shard: (i * 3) % 8 }) });
    for (const iso of [String(since), new Date(since).toISOString()]) {
      const to = join(out, `since-${iso.length}`);
      const r = await cli(['export', 'objects', '--data', dir, '--type', 'pin', '--to', to, '--since', iso, '--json']);
      assert.equal(r.code, 0, r.stderr);
      assertObjectsExported(await readExport(join(to, 'pin')), later, 'pin');
    }
    written.push(...later);
  });

  test('mappings: every pair once, ids and sequence as stored', async () => {
    const board = await kit.objects.create('board', { name: 'b' });
    const pins = written.slice(0, 25).map((w) => w.obj.id);
    for (const [i, p] of pins.entries()) await kit.mappings.add('board_has_pins', board.id, p, { sequence: 1000 + i });
    const r = await cli(['export', 'mappings', '--data', dir, '--type', 'board_has_pins', '--to', join(out, 'maps'), '--json']);
    assert.equal(r.code, 0, r.stderr);
    const rows = await readExport(join(out, 'maps', 'board_has_pins'));
    assert.equal(rows.length, pins.length);
    for (const [i, p] of pins.entries()) {
      const got = rows.filter((x) => x.to_id === p);
      assert.equal(got.length, 1, `pair to ${p} once`);
      assert.deepEqual([got[0]!.from_id, got[0]!.sequence], [board.id, BigInt(1000 + i)]);
    }
  });

  test('bad input: one readable line, exit 2, nothing written', async () => {
    const to = join(out, 'bad');
    assertBadInput(await cli(['export', 'objects', '--data', dir, '--type', 'pinn', '--to', to]), 'unknown type', /UNKNOWN_TYPE: unknown type "pinn"/);
    assertBadInput(await cli(['export', 'mappings', '--data', dir, '--type', 'nope', '--to', to]), 'unknown mapping', /UNKNOWN_MAPPING/);
    assertBadInput(await cli(['export', 'objects', '--data', dir, '--type', 'pin', '--to', to, '--since', 'yesterday']), 'bad --since', /INVALID_ARGUMENT: --since "yesterday" is not a time/);
    assertBadInput(await cli(['export', 'objects', '--data', dir, '--type', 'pin', '--to', to, '--since', '2026-11-28T10:00:00']), 'a time without a zone', /INVALID_ARGUMENT/);
    assertBadInput(await cli(['export', 'mappings', '--data', dir, '--type', 'board_has_pins', '--to', to, '--since', '0']), '--since on mappings', /unknown option '--since'/);
    assertBadInput(await cli(['export', 'objects', '--data', join(dir, 'missing'), '--type', 'pin', '--to', to]), 'missing data dir', /INVALID_CONFIG: no config file/);
    assertBadInput(await cli(['export', 'objects', '--dir', join(dir, 'missing'), '--type', 'pin', '--to', to]), 'missing dev cluster');
    assert.equal(existsSync(to), false, 'nothing written');
    const other = await cli(['export', 'objects', '--data', dir, '--type', 'pin', '--to', join(out, 'full'), '--since', '5']);
    assertBadInput(other, 'another export\'s directory', /ALREADY_EXISTS: .* holds an export of objects pin/);
    assert.equal(parquetFiles(join(out, 'full', 'pin')).length, 5, 'its files untouched');
    // A state file a kill truncated (written atomically now, but an old run's may be): named, not INTERNAL.
    const torn = join(out, 'torn', 'pin');
    mkdirSync(torn, { recursive: true });
    writeFileSync(join(torn, '_export.json'), '{"what":"obj');
    assertBadInput(await cli(['export', 'objects', '--data', dir, '--type', 'pin', '--to', join(out, 'torn')]), 'a torn state file', /INVALID_CONFIG: .*_export\.json is not an export's state file/);
    assert.deepEqual(parquetFiles(torn), [], 'nothing written');
  });

  test('the map changed during the run (a move or failover switched): refused as incomplete, the complete files kept; the re-run finishes', async () => {
    const to = join(out, 'map-changed');
    let bumped = false;
    await assert.rejects(exportShards({ data: dir }, {
      what: 'objects', name: 'pin', to,
      // After the first shard, the map is written again (a new version, as a switch makes).
      onShard: async () => {
        if (bumped) return;
        bumped = true;
        const store = createTopologyStore({ kind: 'file', path: 'topology.json' }, { dataDir: dir });
        const stored = await store.read();
        await store.write(stored ?? ShardMap.fromJSON(defaultConfig({ shards: 8, pairs: 2 }).shardMap), stored?.version ?? 0);
        await store.close();
      },
    }), (err) => isShardKitError(err, 'PRECONDITION_FAILED') && /the shard map changed during the export/.test((err as Error).message));
    const kept = parquetFiles(join(to, 'pin'));
    const again = await exportShards({ data: dir }, { what: 'objects', name: 'pin', to });
    assert.equal(again.skipped, kept.length, 'the files of the first run are kept');
    assertObjectsExported(await readExport(join(to, 'pin')), written, 'pin');
  });

  test('a shard move in progress: refused with a clear line, nothing written (its target holds a half copy)', async () => {
    const store = createTopologyStore({ kind: 'file', path: 'topology.json' }, { dataDir: dir });
    try {
      const stored = await store.read();
      const map = stored ?? ShardMap.fromJSON(defaultConfig({ shards: 8, pairs: 2 }).shardMap);
      const json = map.toJSON();
      const r0 = json.ranges[0]!;
      const now = Date.now();
      await store.write(ShardMap.fromJSON({ ...json, moves: [{ id: 'm1', kind: 'move', range: [r0.range[0], r0.range[0]], source: { master: r0.master }, target: { master: json.ranges[1]!.master }, phase: 'started', holdMs: 1000, startedAt: now, updatedAt: now }] }), stored?.version ?? 0);
      const to = join(out, 'during-move');
      assertBadInput(await cli(['export', 'objects', '--data', dir, '--type', 'pin', '--to', to]), 'a move in progress', /PRECONDITION_FAILED: a shard move is in progress/);
      assert.equal(existsSync(to), false, 'nothing written');
    } finally {
      await store.close();
    }
  });
});
