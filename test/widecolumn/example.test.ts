import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { tempDir } from './helpers.js';

test('examples/user-sequences runs and prints the latest events of each type, newest first', async () => {
  const tmp = tempDir();
  try {
    const script = join(import.meta.dirname, '..', '..', 'examples', 'user-sequences', 'user-sequences.ts');
    const out = await new Promise<string>((resolve, reject) => {
      execFile(process.execPath, ['--import', 'tsx', script, tmp.dir], { env: { ...process.env, NODE_OPTIONS: '' } }, (err, stdout, stderr) => (err ? reject(new Error(stderr)) : resolve(stdout)));
    });
    const clicks = /^ {2}click +(.*)$/m.exec(out);
    assert.ok(clicks, out);
    const ids = clicks[1]!.trim().split(/\s+/).map((e) => Number(e.split('@')[0]));
    assert.equal(ids.length, 5);
    assert.deepEqual(ids, [...ids].sort((a, b) => b - a), 'newest first');
    assert.match(out, /user 1003: last /);
    assert.match(out, /compaction removed 602 events beyond the newest 50 per type/);
  } finally {
    tmp.cleanup();
  }
});
