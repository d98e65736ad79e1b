import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { WideColumnStore } from '../../src/widecolumn/index.js';
import { tempDir } from './helpers.js';

test('kill -9 during a stream of acknowledged puts: after reopening every acknowledged put is there, batches all or nothing', async () => {
  const tmp = tempDir();
  const dir = join(tmp.dir, 'widecolumn');
  try {
    const child = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'fixtures', 'put-writer.ts'), dir], { stdio: ['ignore', 'pipe', 'inherit'] });
    let acked = -1;
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
    await new Promise<void>((resolve, reject) => {
      child.on('exit', () => reject(new Error('writer exited before it was killed')));
      createInterface({ input: child.stdout! }).on('line', (line) => {
        if (line === 'ready') return;
        acked = Number(line);
        // Kill in the middle of the stream, while puts are in flight.
        if (acked === 1500) {
          child.kill('SIGKILL');
          resolve();
        }
      });
    });
    assert.equal(await exited, 'SIGKILL');
    assert.ok(acked >= 1500);

    const store = await WideColumnStore.open(dir, { shards: 64 });
    try {
      const seen = new Set<number>();
      for (let u = 0; u < 17; u++) {
        const r = await store.getRow('crash', `user${u}`, { versions: 1000, columns: ['all'] });
        for (const c of r.columns[0]?.cells ?? []) seen.add(Number(c.value.toString()));
      }
      const batches = [];
      for (let i = 0; i <= acked + 5; i += 5) batches.push(i);
      const got = await store.batchGetRows('crash', batches.flatMap((i) => [0, 1, 2].map((k) => ({ row: `batch${i}-${k}` }))));
      for (let b = 0; b < batches.length; b++) {
        const present = [0, 1, 2].map((k) => got[b * 3 + k]!.columns.length === 1);
        assert.ok(present.every((p) => p === present[0]), `batch ${batches[b]} applied all or nothing`);
        if (present[0]) seen.add(batches[b]!);
      }
      for (let i = 0; i <= acked; i++) assert.ok(seen.has(i), `acknowledged put ${i} survived kill -9`);
    } finally {
      await store.close();
    }
  } finally {
    tmp.cleanup();
  }
});
