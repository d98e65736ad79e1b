/**
 * Two processes on one data directory: both create the same SQLite shard files and write to
 * them at once; nothing is lost and neither sees an error.
 * @integration (scripts/run-tests.mjs: in `npm test`, not `npm run test:unit`): two tsx child
 * processes that each open a ShardKit (~3 s of CPU).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defaultConfig } from '../../src/config/config.js';
import { ShardKit } from '../../src/kit/shard-kit.js';

const WRITER = fileURLToPath(new URL('./fixtures/concurrent-writer.ts', import.meta.url));

function runWriter(dataDir: string, name: string, startAt: number, count: number): Promise<{ board: string; ids: string[] }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', WRITER, dataDir, name, String(startAt), String(count)], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      if (code !== 0) reject(new Error(`writer ${name} exited ${code}: ${err.trim().split('\n').slice(-5).join(' | ')}`));
      else resolve(JSON.parse(out.trim().split('\n').pop()!) as { board: string; ids: string[] });
    });
  });
}

test('two processes creating the same shard files and writing to them at once: nothing lost, no errors', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'shardkit-mp-'));
  try {
    // Both start writing at the same moment on a data dir with no shard files yet, so every
    // file is created by whichever process gets there first while the other does the same.
    const startAt = Date.now() + 1500;
    const [a, b] = await Promise.all([runWriter(dataDir, 'a', startAt, 96), runWriter(dataDir, 'b', startAt, 96)]);
    assert.equal(new Set([...a.ids, ...b.ids]).size, 192, 'no ID handed out twice across processes');
    const kit = await ShardKit.open({ config: defaultConfig({ shards: 16, pairs: 2 }), dataDir });
    try {
      for (const [name, w] of [['a', a], ['b', b]] as const) {
        const objects = await kit.objects.getMany(w.ids);
        objects.forEach((o, i) => {
          assert.ok(o, `object ${w.ids[i]} of writer ${name} is readable`);
          assert.deepEqual(o.data, { by: name, i, touched: true });
        });
        assert.equal(await kit.mappings.count('board_has_pins', w.board), 96);
      }
    } finally {
      await kit.close();
    }
    // Every shard file exists once, no temp files were left behind.
    const files = readdirSync(dataDir, { recursive: true }).map(String);
    assert.deepEqual(files.filter((f) => f.endsWith('.tmp')), []);
    assert.equal(files.filter((f) => /db\d{5}\.sqlite$/.test(f)).length, 16);
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});
