/** heal's reporter: the webhook gets every decision (retried, never blocking), /metrics counts them, /status shows each pair's last one. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { HealReporter } from '../../src/ops/heal/heal-report.js';
import type { HealDecision } from '../../src/ops/heal/heal-supervisor.js';

const decision = (verdict: HealDecision['verdict'], master = 'MySQL001A', extra: Partial<HealDecision> = {}): HealDecision => ({
  at: '2026-11-28T03:00:00.000Z', master, slave: 'MySQL001B', verdict, evidence: { master, slave: 'MySQL001B', masterReachable: false, slaveReachable: true }, ...extra,
});

test('the webhook receives each decision as JSON; a failing hook is retried, then dropped with a log line', async () => {
  const got: Array<{ verdict: string; master: string }> = [];
  let failNext = 2;
  const hook = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      if (failNext-- > 0) {
        res.writeHead(502).end();
        return;
      }
      got.push(JSON.parse(body) as { verdict: string; master: string });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => hook.listen(0, '127.0.0.1', r));
  const logs: string[] = [];
  const reporter = new HealReporter({ webhook: `http://127.0.0.1:${(hook.address() as { port: number }).port}/page`, log: (m) => logs.push(m) });
  try {
    reporter.decision(decision('suspect'));
    reporter.decision(decision('failover', 'MySQL001A', { failover: { kind: 'emergency', oldMaster: 'MySQL001A', newMaster: 'MySQL001B', position: '1-1-9', mapVersion: 7, oldMasterFenced: false, oldMasterIsSlave: false, writePauseMs: 900 } }));
    await reporter.close();
    // The first post failed twice and went through on its third try; the second at once.
    assert.deepEqual(got.map((d) => d.verdict), ['suspect', 'failover']);
    assert.deepEqual(logs, []);

    const down = new HealReporter({ webhook: 'http://127.0.0.1:1/nothing-listens', log: (m) => logs.push(m) });
    down.decision(decision('refuse'));
    await down.close();
    assert.equal(logs.length, 1);
    assert.match(logs[0]!, /dropped the refuse decision of MySQL001A after 3 tries/);
  } finally {
    await new Promise<void>((r) => hook.close(() => r()));
  }
});

test('/metrics counts decisions and failovers and shows pair health; /status the last decision per pair; anything else is a 404', async () => {
  const reporter = new HealReporter();
  const port = await reporter.listen(0);
  try {
    reporter.setActing(true);
    reporter.pairState('MySQL001A', 'MySQL001B', false);
    reporter.pairState('MySQL002A', 'MySQL002B', true);
    reporter.decision(decision('suspect'));
    reporter.decision(decision('failover', 'MySQL001A', { error: 'slave gone' }));
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    assert.match(metrics, /shardkit_heal_decisions_total\{verdict="suspect"\} 1/);
    assert.match(metrics, /shardkit_heal_failovers_total\{outcome="failed"\} 1/);
    assert.match(metrics, /shardkit_heal_pair_healthy\{master="MySQL001A",slave="MySQL001B"\} 0/);
    assert.match(metrics, /shardkit_heal_pair_healthy\{master="MySQL002A",slave="MySQL002B"\} 1/);
    assert.match(metrics, /shardkit_heal_acting 1/);
    const status = (await (await fetch(`http://127.0.0.1:${port}/status`)).json()) as { pairs: Array<{ master: string; verdict: string; error?: string }> };
    assert.deepEqual(status.pairs, [{ master: 'MySQL001A', slave: 'MySQL001B', verdict: 'failover', at: '2026-11-28T03:00:00.000Z', error: 'slave gone' }]);
    const other = await fetch(`http://127.0.0.1:${port}/metrics?x=1`);
    assert.equal(other.status, 404);
    assert.equal(((await other.json()) as { error: { code: string } }).error.code, 'NOT_FOUND');
  } finally {
    await reporter.close();
  }
});

test('heal: a bad --webhook, or --rebuild without act mode, is one line and exit 2 before anything is probed', async () => {
  const { cli, assertBadInput } = await import('../cli/cli-harness.js');
  assertBadInput(await cli(['heal', '--dir', '/nonexistent', '--webhook', 'ftp://pager']), '--webhook ftp', /--webhook takes an http/);
  assertBadInput(await cli(['heal', '--dir', '/nonexistent', '--rebuild']), '--rebuild in observe mode', /--rebuild needs --mode act/);
});
