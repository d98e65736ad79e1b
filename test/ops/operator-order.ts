import assert from 'node:assert/strict';
import { ERROR_CODES, type ErrorCode } from '../../src/errors.js';
import type { ShardKit } from '../../src/kit/shard-kit.js';
import { cliProcess as cli } from '../cli/cli-harness.js';
import { ackedAfter, newLedger, writeLoad, type Ledger } from '../failover/ledger.js';

/** Runs `shardkit args` as an operator would and fails the test, with its output, on a non-zero exit. */
export async function operatorRuns(args: string[]): Promise<{ stdout: string; stderr: string }> {
  const r = await cli(args);
  assert.equal(r.code, 0, `shardkit ${args.join(' ')}: ${r.stderr}${r.stdout}`);
  return r;
}

/**
 * Two writers per service on `shards` while `steps` run; `progressed()` resolves once a write made
 * after the call was acknowledged. Afterwards every acknowledged write must read back, and every
 * refused one must have had a retryable (503) code.
 */
export async function underLoad(services: ShardKit[], shards: number[], steps: (progressed: () => Promise<void>) => Promise<void>): Promise<Ledger> {
  let release!: () => void;
  const live = newLedger();
  const running = writeLoad(services, shards, new Promise<void>((r) => (release = r)), 2, live);
  try {
    await steps(() => ackedAfter(live, Date.now()));
  } finally {
    release();
  }
  const ledger = await running;
  const read = await services[0]!.objects.getMany(ledger.acked.map((a) => a.id));
  const lost = ledger.acked.filter((_, i) => read[i] === undefined).map((a) => a.id);
  assert.deepEqual(lost, [], `${lost.length} of ${ledger.acked.length} acknowledged writes lost`);
  const nonRetryable = [...ledger.errors].filter(([code]) => !(code in ERROR_CODES) || ERROR_CODES[code as ErrorCode] !== 503);
  assert.deepEqual(nonRetryable, [], 'writes refused with a non-retryable answer');
  assert.ok(ledger.acked.length > 50, `${ledger.acked.length} writes`);
  return ledger;
}
