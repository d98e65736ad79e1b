/**
 * `npm run chaos -- [--engine mariadb|postgres] [--seed N] [--seeds K] [--faults F] [--minutes M]`: longer chaos schedules than
 * CI's (F random faults per run, default 12; or as many as fit in M minutes), one fresh fleet per
 * seed, seeds N..N+K-1. Prints one JSON summary line per seed and a final tally; exit 1 when any
 * run lost an acknowledged write, saw two writable masters, failed over falsely or verified dirty.
 */
import { parseArgs } from 'node:util';
import { ensureBuilt } from '../cli/cli-harness.js';
import { runChaos, type ChaosSummary } from './chaos-run.js';
import { faultKinds, schedule } from './chaos-schedule.js';

const { values } = parseArgs({ options: { seed: { type: 'string' }, seeds: { type: 'string', default: '1' }, faults: { type: 'string' }, minutes: { type: 'string' }, quiet: { type: 'boolean', default: false }, engine: { type: 'string', default: 'mariadb' } } });
const first = values.seed !== undefined ? Number(values.seed) : Math.floor(Math.random() * 2 ** 31);
const seeds = Number(values.seeds);
// A fault with its repair takes ~10-30 s on 2 cores: --minutes picks a count from that.
const count = values.faults !== undefined ? Number(values.faults) : values.minutes !== undefined ? Math.max(1, Math.round((Number(values.minutes) * 60) / 20)) : 12;
if (values.engine !== 'mariadb' && values.engine !== 'postgres') {
  process.stderr.write(`chaos: --engine is mariadb or postgres, not ${values.engine}\n`);
  process.exit(2);
}
const engine = values.engine;
if (![first, seeds, count].every((n) => Number.isInteger(n) && n >= 0) || seeds < 1) {
  process.stderr.write('chaos: --seed, --seeds, --faults and --minutes take whole numbers\n');
  process.exit(2);
}
ensureBuilt();
const clean = (s: ChaosSummary) => s.lost.length === 0 && s.doubleWriters.length === 0 && s.falseFailovers === 0 && s.verifyClean;
const results: ChaosSummary[] = [];
for (let seed = first; seed < first + seeds; seed++) {
  const faults = schedule(seed, { count, from: faultKinds(engine), pairs: 2, services: 2 });
  try {
    const s = await runChaos({ engine, seed, faults, pairs: 2, shards: 8, log: values.quiet ? undefined : (m) => process.stderr.write(`[seed ${seed}] ${m}\n`) });
    results.push(s);
    process.stdout.write(`${JSON.stringify({ ...s, clean: clean(s), lost: s.lost.length, doubleWriters: s.doubleWriters.length })}\n`);
  } catch (err) {
    process.stdout.write(`${JSON.stringify({ seed, clean: false, error: (err as Error).message })}\n`);
    results.push({ seed, outcomes: [], acked: 0, lost: ['run failed'], doubleWriters: [], falseFailovers: 0, verifyClean: false, errors: {}, durationMs: 0 });
  }
}
const times = (kind: string) => results.flatMap((r) => r.outcomes.filter((o) => o.kind === kind && o.writesBackMs !== undefined).map((o) => o.writesBackMs!)).sort((a, b) => a - b);
const pct = (xs: number[], p: number) => (xs.length === 0 ? null : xs[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]);
const [killed, stopped] = [times('kill-master'), times('stop-master')];
process.stdout.write(`${JSON.stringify({
  engine, seeds: results.length, clean: results.filter(clean).length, faults: results.reduce((n, r) => n + r.outcomes.length, 0), acked: results.reduce((n, r) => n + r.acked, 0),
  lost: results.reduce((n, r) => n + r.lost.filter((x) => x !== 'run failed').length, 0), runsFailed: results.filter((r) => r.lost.includes('run failed')).length, doubleWriters: results.reduce((n, r) => n + r.doubleWriters.length, 0), falseFailovers: results.reduce((n, r) => n + r.falseFailovers, 0),
  killMasterToWritesMs: { p50: pct(killed, 50), p99: pct(killed, 99), n: killed.length }, stopMasterToWritesMs: { p50: pct(stopped, 50), p99: pct(stopped, 99), n: stopped.length },
})}\n`);
process.exit(results.every(clean) ? 0 : 1);
