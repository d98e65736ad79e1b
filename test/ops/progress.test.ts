/**
 * The progress of long operations (src/ops/progress.ts): the bar a person sees on a TTY carries
 * the numbers given with each update (a move's phase and rows copied), and JSON lines say the same
 * when stderr is not a TTY.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { createProgress, formatBytes } from '../../src/ops/progress.js';

/** A stream that says it is a terminal, and keeps what was drawn on it. */
function fakeTty(): { stream: PassThrough & { isTTY: boolean; columns: number }; text: () => string } {
  const stream = Object.assign(new PassThrough(), { isTTY: true, columns: 200 });
  const chunks: Buffer[] = [];
  stream.on('data', (c: Buffer) => chunks.push(c));
  // Cursor moves and colours left out: what remains is the text on the line.
  return { stream, text: () => Buffer.concat(chunks).toString().replace(/\x1B(\[[0-9;?]*[A-Za-z]|[78])/g, '') };
}

test('the bar shows done/total with its unit and the extra numbers of the last update', () => {
  const tty = fakeTty();
  const p = createProgress('copy shards 0..3', 4, { mode: 'bar', stream: tty.stream, unit: 'shards' });
  p.update(2, { phase: 'started', rows: '1200/5000', lag: undefined });
  p.finish({ rows: '5000/5000' });
  const out = tty.text();
  assert.match(out, /copy shards 0\.\.3 \[/);
  assert.match(out, /100% \| 4\/4 shards \| phase started \| rows 5000\/5000 \|/);
  assert.doesNotMatch(out, /lag/, 'an undefined value is left out');
});

test('a bar without extra numbers draws no empty separators', () => {
  const tty = fakeTty();
  const p = createProgress('verify shards 0..1', 2, { mode: 'bar', stream: tty.stream });
  p.update(1);
  p.finish();
  assert.match(tty.text(), /100% \| 2\/2 \| .* elapsed/);
});

test('formatBytes (the bar\'s bytes): below 1 KiB as they are, then one decimal of the largest binary unit', () => {
  assert.deepEqual([0, 1023, 1024, 1536, 10 * 1024 ** 2, 3 * 1024 ** 3 + 1, 2 * 1024 ** 5].map(formatBytes), ['0 B', '1023 B', '1.0 KiB', '1.5 KiB', '10.0 MiB', '3.0 GiB', '2048.0 TiB']);
});
