import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultConfig } from '../../src/config/config.js';
import { ShardKit } from '../../src/kit/shard-kit.js';
import type { BackupEngine } from '../../src/ops/backup/backup-engine.js';
import { pruneBackups } from '../../src/ops/backup/backup-retention.js';
import { DirectoryTarget } from '../../src/ops/backup/backup-target.js';
import { gtidSeqs, startsAtOrBefore } from '../../src/ops/backup/mariadb-binlog-archive.js';
import { archivedSegments, pruneSegments, segmentsFrom } from '../../src/ops/backup/postgres-wal-archive.js';
import { assertBadInput, cli } from '../cli/cli-harness.js';

const ids = async (to: string) => {
  const r = await cli(['backup', 'list', '--from', to, '--json']);
  assert.equal(r.code, 0, r.stderr);
  return (JSON.parse(r.stdout) as { backups: Array<{ id: string; complete: boolean }> }).backups;
};

describe('backup create --keep N (retention) on the embedded default', () => {
  let dir: string;
  let to: string;
  let config: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'shardkit-keep-'));
    to = mkdtempSync(join(tmpdir(), 'shardkit-keep-to-'));
    config = join(dir, 'shardkit.json');
    writeFileSync(config, JSON.stringify(defaultConfig({ shards: 4, pairs: 1 })));
  });
  after(() => {
    rmSync(dir, { recursive: true, force: true });
    rmSync(to, { recursive: true, force: true });
  });

  test('three backups with --keep 2: the oldest is removed, the newest two stay and the newest restores', async () => {
    const made: string[] = [];
    for (let i = 0; i < 3; i++) {
      const kit = await ShardKit.open({ configPath: config, dataDir: dir });
      await kit.objects.create('pin', { backup: i }, { shard: i });
      await kit.close();
      const r = await cli(['backup', 'create', '--config', config, '--to', to, '--keep', '2', '--json']);
      assert.equal(r.code, 0, r.stderr);
      const m = JSON.parse(r.stdout) as { id: string; retention: { kept: string[]; removed: string[] } };
      made.push(m.id);
      assert.equal(m.retention.kept.at(-1), m.id, 'the backup just made is kept');
      assert.deepEqual(m.retention.removed, i < 2 ? [] : [made[0]]);
    }
    assert.deepEqual((await ids(to)).map((b) => b.id), made.slice(1));
    const v = await cli(['backup', 'verify', '--config', config, '--from', to, '--json']);
    assert.equal(v.code, 0, v.stderr);
    assert.equal((JSON.parse(v.stdout) as { id: string; rows: number }).id, made[2]);
  });

  test('bad input: --keep 0, -1 or "all": a clear error, no backup made or removed', async () => {
    const was = await ids(to);
    for (const keep of ['0', '-1', 'all']) assertBadInput(await cli(['backup', 'create', '--config', config, '--to', to, '--keep', keep]), `--keep ${keep}`, /INVALID_ARGUMENT: --keep must be a whole number of backups, at least 1/);
    assert.deepEqual(await ids(to), was);
  });

  test('an incomplete backup newer than every complete one: retention keeps the newest complete one', async () => {
    const complete = (await ids(to)).filter((b) => b.complete).map((b) => b.id);
    incompleteBackup(to, '29991231T235959999Z');
    const engine = { kind: 'sqlite' } as unknown as BackupEngine;
    const r = await pruneBackups(engine, new DirectoryTarget(to), 1);
    assert.deepEqual(r.kept, [complete.at(-1)], 'the newest complete backup, not the incomplete one');
    assert.ok((await ids(to)).some((b) => b.id === '29991231T235959999Z' && !b.complete), 'the incomplete one is left to the next create');
  });
});

/** What a run killed before its manifest leaves: backup.json and no manifest. */
function incompleteBackup(to: string, id: string): void {
  mkdirSync(join(to, id), { recursive: true });
  writeFileSync(join(to, id, 'backup.json'), JSON.stringify({ format: 1, id, engine: 'sqlite', mapVersion: 1, startedAt: Date.now() }));
}

describe('which archived logs no kept backup needs', () => {
  test('PostgreSQL: the segments that end at or before the oldest kept LSN go; the one holding it, later ones and the open .partial stay', () => {
    const dir = mkdtempSync(join(tmpdir(), 'shardkit-keep-wal-'));
    try {
      for (const n of ['000000010000000000000001', '000000010000000000000002', '000000010000000000000003', '000000010000000100000000', '000000010000000100000001.partial', 'notes.txt']) writeFileSync(join(dir, n), '');
      assert.deepEqual(pruneSegments(dir, '0/3000060'), ['000000010000000000000001', '000000010000000000000002']);
      assert.deepEqual(archivedSegments(dir).map((s) => [s.name, s.partial]), [['000000010000000000000003', false], ['000000010000000100000000', false], ['000000010000000100000001', true]]);
      assert.deepEqual(pruneSegments(dir, '0/3000000'), [], 'a position at a segment\'s first byte still needs that segment');
      assert.deepEqual(pruneSegments(dir, '1/10'), ['000000010000000000000003']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('PostgreSQL: a restore uses the archived segments from the backup\'s position up to the first gap (the archiver was down longer than the standby kept its WAL)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'shardkit-walgap-'));
    try {
      for (const n of ['000000010000000000000001', '000000010000000000000002', '000000010000000000000003', '000000020000000000000003', '000000020000000000000004', '000000020000000000000006', '000000020000000000000007.partial']) writeFileSync(join(dir, n), '');
      assert.deepEqual(segmentsFrom(dir, '0/2000028').map((s) => `${s.timeline}:${s.name}`), ['1:000000010000000000000002', '1:000000010000000000000003', '2:000000020000000000000003', '2:000000020000000000000004'], 'segment 5 is missing: 6 and 7 are of no use');
      assert.deepEqual(segmentsFrom(dir, '0/6000000').map((s) => s.name), ['000000020000000000000006', '000000020000000000000007']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('MariaDB: a binlog file is needed until the next one starts at or before the position in every domain', () => {
    const pos = gtidSeqs('0-1-120,1-2-7');
    assert.equal(startsAtOrBefore(gtidSeqs('0-1-120,1-2-7'), pos), true);
    assert.equal(startsAtOrBefore(gtidSeqs('0-1-100'), pos), true);
    assert.equal(startsAtOrBefore(gtidSeqs('0-1-121,1-2-7'), pos), false, 'the earlier file holds 0-1-121, after the position');
    assert.equal(startsAtOrBefore(gtidSeqs('0-1-100,2-1-1'), pos), false, 'a domain the position has none of');
    assert.equal(startsAtOrBefore(gtidSeqs(''), pos), true, 'the first file of a fresh server');
  });
});
