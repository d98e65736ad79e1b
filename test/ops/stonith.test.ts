/** The fleet fence command of an emergency failover (SHARDKIT_FENCE_COMMAND): run with the host named, and a failure refuses the promotion. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fenceUnreachable, runHook } from '../../src/ops/failover/stonith.js';
import type { HostAdmin } from '../../src/ops/failover/host-admin.js';

const fleetAdmin = { address: () => ({ host: '10.0.0.7', port: 3307 }) } as unknown as HostAdmin;

test('SHARDKIT_FENCE_COMMAND runs with the host, address and port; exit 0 means fenced', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-stonith-'));
  try {
    const out = join(dir, 'fenced');
    const how = await fenceUnreachable(fleetAdmin, 'MySQL004A', { ...process.env, SHARDKIT_FENCE_COMMAND: `echo "$SHARDKIT_FENCE_HOST $SHARDKIT_FENCE_ADDRESS:$SHARDKIT_FENCE_PORT" > ${out}` });
    assert.equal(how, 'command');
    assert.equal(readFileSync(out, 'utf8').trim(), 'MySQL004A 10.0.0.7:3307');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a failing fence command refuses the promotion with its last line of stderr', async () => {
  await assert.rejects(
    fenceUnreachable(fleetAdmin, 'MySQL004A', { ...process.env, SHARDKIT_FENCE_COMMAND: 'echo "ipmi: no route" >&2; exit 4' }),
    (err: { code?: string; message: string }) => err.code === 'PRECONDITION_FAILED' && /exit 4: ipmi: no route/.test(err.message) && /not promoting/.test(err.message),
  );
});

test('no fence command on a fleet: the failover goes on, reported as unfenced', async () => {
  const env = { ...process.env };
  delete env.SHARDKIT_FENCE_COMMAND;
  assert.equal(await fenceUnreachable(fleetAdmin, 'MySQL004A', env), 'unfenced');
});

test('a hook that does not end is killed with its process group at its timeout and counts as failed', async () => {
  const marker = `shardkit-hook-${process.pid}-${Date.now()}`;
  const r = await runHook(`sleep 60 # ${marker}`, { ...process.env }, 300);
  assert.match(String(r), /no end within 0 s \(killed\)/);
  // The shell and its sleep are gone (the group was killed), not left running.
  // SIGKILL is delivered at once but a loaded machine may take a moment to reap the sleep: wait for
  // the outcome (bounded), as a hook left running would never go (it flaked in test:unit at load ~10).
  let left = '';
  for (let i = 0; i < 200; i++) {
    left = spawnSync('pgrep', ['-f', marker], { encoding: 'utf8' }).stdout.trim();
    if (left === '') break;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal(left, '', 'the hook\'s sleep outlived the kill of its group');
});
