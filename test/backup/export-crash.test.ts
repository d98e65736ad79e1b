// @integration: kills the real binary (-9) mid-export.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultConfig } from '../../src/config/config.js';
import { ShardKit } from '../../src/kit/shard-kit.js';
import { CLI, ensureBuilt } from '../cli/cli-harness.js';
import { until } from './backup-helpers.js';
import { parquetFiles, partials, readExport } from './export-helpers.js';

const SHARDS = [0, 1, 2];
const PER_SHARD = 30_000;

let dir: string;
before(async () => {
  ensureBuilt();
  dir = mkdtempSync(join(tmpdir(), 'shardkit-export-crash-'));
  writeFileSync(join(dir, 'shardkit.json'), JSON.stringify(defaultConfig({ shards: 4, pairs: 1 })));
  const kit = await ShardKit.open({ configPath: join(dir, 'shardkit.json'), dataDir: dir });
  try {
    for (const shard of SHARDS) {
      for (let i = 0; i < PER_SHARD; i += 1000) await kit.objects.createMany('pin', Array.from({ length: 1000 }, (_, j) => ({ data: { n: i + j, title: `pin ${shard}/${i + j}` }, shard })));
    }
  } finally {
    await kit.close();
  }
});
after(() => rmSync(dir, { recursive: true, force: true }));

test('kill -9 of the exporter while it writes a shard leaves no final-named partial file; the re-run completes with every row once', async () => {
  const out = join(dir, 'out');
  const pinDir = join(out, 'pin');
  const child = spawn(process.execPath, [CLI, 'export', 'objects', '--data', dir, '--type', 'pin', '--to', out], { stdio: ['ignore', 'ignore', 'pipe'] });
  child.stderr!.resume();
  const exited = new Promise<NodeJS.Signals | null>((r) => child.on('exit', (_code, signal) => r(signal)));
  // Killed while a shard's file is being written and after another's was completed: mid-run.
  await until('one shard done and the next one in writing', () => parquetFiles(pinDir).length >= 1 && partials(pinDir).length >= 1);
  child.kill('SIGKILL');
  assert.equal(await exited, 'SIGKILL', 'the exporter was killed, not finished');
  const done = parquetFiles(pinDir);
  assert.ok(done.length < SHARDS.length, `killed before the end (${done.join(', ')})`);
  for (const f of done) {
    const rows = (await readExport(pinDir)).filter((r) => r.file === f);
    assert.equal(rows.length, PER_SHARD, `${f}, under its final name, is complete`);
  }

  const rerun = spawn(process.execPath, [CLI, 'export', 'objects', '--data', dir, '--type', 'pin', '--to', out, '--json'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  rerun.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  rerun.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const code = await new Promise<number | null>((r) => rerun.on('exit', (c) => r(c)));
  assert.equal(code, 0, stderr);
  const report = JSON.parse(stdout) as { skipped: number; written: number };
  assert.equal(report.skipped, done.length, 'the complete files were kept');
  assert.equal(report.written, SHARDS.length - done.length);
  assert.match(stderr, /"msg":"export objects pin finished"/, 'JSON progress lines when stderr is not a TTY');
  assert.deepEqual(partials(pinDir), [], 'the killed run\'s temp file is gone');
  const rows = await readExport(pinDir);
  assert.equal(rows.length, SHARDS.length * PER_SHARD);
  assert.equal(new Set(rows.map((r) => r.id)).size, rows.length, 'every row once');
});
