/**
 * kill -9 of a writer process in the middle of acknowledged RocksDB writes, then reopening.
 * @integration (scripts/run-tests.mjs: in `npm test`, not `npm run test:unit`): tsx child
 * processes that load RocksDB, killed with -9 (~5 s of CPU).
 */
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

test('model, crash part: kill -9 under batch writers, a delete-and-backfill loop and a compaction; after reopening the ledger of acknowledged writes holds', async () => {
  const tmp = tempDir();
  const dir = join(tmp.dir, 'widecolumn');
  try {
    const child = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'fixtures', 'crash-model-writer.ts'), dir], { stdio: ['ignore', 'pipe', 'inherit'] });
    const ledger = { w: [-1, -1], b: -1 };
    let lines = 0;
    let killed = false;
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
    await new Promise<void>((resolve, reject) => {
      child.on('exit', () => reject(new Error('writer exited before it was killed')));
      createInterface({ input: child.stdout! }).on('line', (line) => {
        const [kind, a, b] = line.split(' ');
        if (kind === 'w') ledger.w[Number(a)] = Number(b);
        else if (kind === 'b') ledger.b = Number(a);
        else return;
        // Kill once every loop has acknowledged something, in the middle of the stream.
        if (++lines >= 1500 && !killed && ledger.b >= 3 && ledger.w.every((n) => n >= 3)) {
          killed = true;
          child.kill('SIGKILL');
          resolve();
        }
      });
    });
    assert.equal(await exited, 'SIGKILL');

    const store = await WideColumnStore.open(dir, { shards: 64 });
    try {
      const rows = await store.batchGetRows('crash', ['b0', 'b1', 'b2'].map((row) => ({ row })));
      for (const w of [0, 1]) {
        const newest = rows.map((r) => Number(r.columns.find((c) => c.column === `w${w}`)?.cells[0]?.value.toString() ?? -1));
        assert.ok(newest.every((n) => n === newest[0]), `writer ${w}: the batch is whole after the crash (${newest.join(',')})`);
        assert.ok(newest[0]! >= ledger.w[w]!, `writer ${w}: acknowledged batch ${ledger.w[w]} survived (found ${newest[0]})`);
      }
      // The acknowledged backfill, or what the next (unacknowledged) steps of the loop may have left.
      const n = ledger.b;
      const got = (await store.getRow('crash', 'bf')).columns[0]?.cells[0]?.value.toString() ?? '';
      assert.ok([`old${n}`, `new${n + 1}`, `newer${n + 1}`, '', `old${n + 1}`].includes(got), `backfill ${n} acknowledged; found "${got}"`);
    } finally {
      await store.close();
    }
  } finally {
    tmp.cleanup();
  }
});
