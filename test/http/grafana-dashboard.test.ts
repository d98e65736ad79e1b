/**
 * Issue #33: docs/grafana-dashboard.json charts only what the service exports. Every PromQL
 * expression parses (the Prometheus project's own parser, @prometheus-io/lezer-promql), and each
 * metric it names is a family of a real /metrics scrape (a histogram through its _bucket, _sum or
 * _count series) of a service with every module: a cache, a wide-column store, ticket servers.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parser } from '@prometheus-io/lezer-promql';
import { defaultConfig } from '../../src/config/config.js';
import { buildApp } from '../../src/http/app.js';
import { ticketsRoutes } from '../../src/http/routes/tickets-routes.js';
import { widecolumnRoutes } from '../../src/http/routes/widecolumn-routes.js';
import { TicketClient } from '../../src/index.js';
import { ShardKit } from '../../src/kit/shard-kit.js';
import { openStore, tempDir } from '../widecolumn/helpers.js';
import { ROOT } from '../cli/cli-harness.js';

interface Panel { title?: string; targets?: Array<{ expr?: string }>; panels?: Panel[] }
interface Dashboard { panels: Panel[]; templating: { list: Array<{ query?: unknown }> } }

/** Grafana's variables, replaced by values PromQL accepts. */
function withoutVariables(expr: string): string {
  return expr.replace(/\$__rate_interval|\$__interval|\$__range/g, '5m').replace(/\$(\w+)/g, '$1');
}

/** The metric names an expression selects; throws when it does not parse. */
function metricNames(expr: string): string[] {
  const text = withoutVariables(expr);
  const tree = parser.parse(text);
  const names: string[] = [];
  const errors: number[] = [];
  tree.iterate({
    enter(node) {
      if (node.type.isError) errors.push(node.from);
      if (node.name === 'Identifier' && node.node.parent?.name === 'VectorSelector') names.push(text.slice(node.from, node.to));
    },
  });
  if (errors.length > 0) throw new Error(`not PromQL at ${errors.join(', ')}: ${expr}`);
  return names;
}

/** Family name -> type, from the # TYPE lines of a scrape. */
function families(scrape: string): Map<string, string> {
  return new Map([...scrape.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1]!, m[2]!]));
}

function exported(name: string, types: Map<string, string>): boolean {
  if (types.has(name)) return true;
  const m = /^(.*)_(bucket|sum|count)$/.exec(name);
  return m !== null && types.get(m[1]!) === 'histogram';
}

test('docs/grafana-dashboard.json: every expression is PromQL naming only metrics /metrics exports', async () => {
  const dashboard = JSON.parse(readFileSync(join(ROOT, 'docs', 'grafana-dashboard.json'), 'utf8')) as Dashboard;
  const exprs: string[] = [];
  const walk = (panels: Panel[]) => {
    for (const p of panels) {
      for (const t of p.targets ?? []) if (t.expr !== undefined) exprs.push(t.expr);
      walk(p.panels ?? []);
    }
  };
  walk(dashboard.panels);
  assert.ok(exprs.length >= 15, `${exprs.length} expressions`);
  const names = new Set(exprs.flatMap(metricNames));
  for (const v of dashboard.templating.list) {
    const m = typeof v.query === 'string' ? /^label_values\((\w+),/.exec(v.query) : null;
    if (m !== null) names.add(m[1]!);
  }

  const tmp = tempDir('sk-grafana-');
  const kit = await ShardKit.open({ config: { ...defaultConfig({ shards: 8, pairs: 2 }), cache: { kind: 'memory' } }, dataDir: tmp.dir });
  const store = await openStore(join(tmp.dir, 'wc'));
  const tickets = new TicketClient({ servers: [{ name: 't1', socket: join(tmp.dir, 'none.sock') }], sequences: ['photos'] });
  const app = await buildApp({ kit, dashboard: false, plugins: [widecolumnRoutes(store, { exportDir: join(tmp.dir, 'exports') }), ticketsRoutes(tickets)] });
  try {
    const res = await app.inject({ method: 'GET', url: '/metrics' });
    assert.equal(res.statusCode, 200);
    const types = families(res.body);
    const missing = [...names].filter((n) => !exported(n, types));
    assert.deepEqual(missing, [], `charted but not exported: ${missing.join(', ')}`);
    // And the other way: every shardkit family has a panel (a new metric gets charted).
    const charted = new Set([...names].map((n) => (exported(n, types) && !types.has(n) ? n.replace(/_(bucket|sum|count)$/, '') : n)));
    const unchartered = [...types.keys()].filter((n) => n.startsWith('shardkit_') && !charted.has(n));
    assert.deepEqual(unchartered, [], `exported but on no panel: ${unchartered.join(', ')}`);
  } finally {
    await app.close();
    await kit.close();
    await store.close();
    await tickets.close();
    tmp.cleanup();
  }
});

test('a misspelled metric or broken PromQL is caught', () => {
  assert.deepEqual(metricNames('sum by (host) (rate(shardkit_storage_duration_seconds_count{job=~"$job"}[$__rate_interval]))'), ['shardkit_storage_duration_seconds_count']);
  assert.throws(() => metricNames('sum by (host) (rate(shardkit_x[5m])'), /not PromQL/);
  assert.equal(exported('shardkit_storage_duration_seconds_bucket', new Map([['shardkit_storage_duration_seconds', 'histogram']])), true);
  assert.equal(exported('shardkit_storage_duration_second_bucket', new Map([['shardkit_storage_duration_seconds', 'histogram']])), false);
});
