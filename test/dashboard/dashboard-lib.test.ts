/**
 * The dashboard's DOM-free logic (dashboard/dashboard-lib.js), checked against the real thing:
 * IDs from our own encoder, Prometheus text from a real app's /metrics.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  counterValue, decodePinterestId, describeSequence, formatBytes, formatDuration, formatRate, heatGroups, heatLevel, histogramQuantile, hottestShards, moveProgress, movePhaseLabel, moveStepLabel, moveTables, formatSeconds, parsePrometheus, pathSegment, rangesByMaster, routeTraffic, summarizeMap,
} from '../../dashboard/dashboard-lib.js';
import { pinterestId } from '../../src/ids/pinterest-id.js';
import { defaultShardMapJson } from '../../src/topology/shard-map.js';
import { createObject, makeApp } from '../http/http-fixture.js';

test('decodePinterestId agrees with pinterestId on every valid ID, and refuses what the service refuses', () => {
  fc.assert(fc.property(fc.integer({ min: 0, max: 65535 }), fc.integer({ min: 0, max: 1023 }), fc.bigInt({ min: 0n, max: (1n << 36n) - 1n }), (shard, type, local) => {
    const id = pinterestId.encode({ shard, type, localId: Number(local) });
    const d = decodePinterestId(` ${id} `);
    assert.deepEqual(d, { ok: true, id: id.toString(), shard, typeId: type, localId: local.toString() });
  }), { numRuns: 2000 });
  // The seed's worked example.
  assert.deepEqual(decodePinterestId('241294492511762325'), { ok: true, id: '241294492511762325', shard: 3429, typeId: 1, localId: '7075733' });
  for (const [text, why] of [['abc', /unsigned decimal/], ['-5', /unsigned decimal/], ['', /unsigned decimal/], ['1.5', /unsigned decimal/], ['18446744073709551616', /over 64 bits/],
    ['123456789012345678901', /unsigned decimal/], [String(1n << 62n), /reserved/], [String((1n << 64n) - 1n), /reserved/]] as const) {
    const d = decodePinterestId(text);
    assert.equal(d.ok, false, text);
    if (!d.ok) assert.match(d.error, why, text);
  }
});

test('parsePrometheus and routeTraffic read a real /metrics: totals, 4xx, 5xx, rates and quantiles per route', async () => {
  const f = await makeApp();
  try {
    const pin = await createObject(f.app, 'pin', { n: 1 });
    for (let i = 0; i < 7; i++) await f.app.inject({ method: 'GET', url: `/v1/objects/${pin.id}` });
    for (let i = 0; i < 3; i++) await f.app.inject({ method: 'GET', url: '/v1/objects/abc' });
    const text = (await f.app.inject({ method: 'GET', url: '/metrics' })).body;
    const first = parsePrometheus(text);
    const sampleLines = text.split('\n').filter((l) => l !== '' && !l.startsWith('#'));
    assert.equal(first.length, sampleLines.length, 'every sample line parsed');
    // NaN (prom-client writes "Nan"; Prometheus reads any case) is legal: event loop lag before its first sample.
    assert.deepEqual(first.map((s) => Number.isNaN(s.value)), sampleLines.map((l) => / nan$/i.test(l)));
    const a = routeTraffic(first, undefined, 0);
    const get = a.routes.find((r) => r.method === 'GET' && r.route === '/v1/objects/:id')!;
    assert.deepEqual({ total: get.total, clientErrors: get.clientErrors, serverErrors: get.serverErrors, rate: get.rate }, { total: 10, clientErrors: 3, serverErrors: 0, rate: undefined });
    assert.ok(get.p50 !== undefined && get.p50 > 0 && get.p99 !== undefined && get.p99 >= get.p50, `quantiles ${get.p50} ${get.p99}`);
    assert.equal(a.routes.find((r) => r.route === '/v1/objects/:type')?.total, 1);
    assert.equal(a.routes[0], get, 'the busiest route first');
    // Five more requests between two scrapes two seconds apart: 2.5 requests a second.
    for (let i = 0; i < 5; i++) await f.app.inject({ method: 'GET', url: `/v1/objects/${pin.id}` });
    const b = routeTraffic(parsePrometheus((await f.app.inject({ method: 'GET', url: '/metrics' })).body), a.totals, 2);
    assert.equal(b.routes.find((r) => r.route === '/v1/objects/:id')!.rate, 2.5);
    assert.equal(counterValue(first, 'shardkit_topology_version'), 1);
    assert.equal(counterValue(first, 'shardkit_cache_hits_total'), undefined, 'no cache, no cache counters');
  } finally {
    await f.cleanup();
  }
});

test('parsePrometheus reads escaped label values, +Inf and exponents; histogramQuantile interpolates like Prometheus', () => {
  const samples = parsePrometheus([
    '# HELP x_total a counter',
    '# TYPE x_total counter',
    'x_total{route="/a\\"b\\\\c",le="+Inf"} 3',
    'y 1.5e-3',
    'z{a="1"} +Inf',
    '',
  ].join('\n'));
  assert.deepEqual(samples, [
    { name: 'x_total', labels: { route: '/a"b\\c', le: '+Inf' }, value: 3 },
    { name: 'y', labels: {}, value: 0.0015 },
    { name: 'z', labels: { a: '1' }, value: Infinity },
  ]);
  // 10 observations: 4 up to 0.1, 9 up to 0.5, 10 in total.
  const buckets = [{ le: 0.5, count: 9 }, { le: 0.1, count: 4 }, { le: Infinity, count: 10 }];
  assert.equal(histogramQuantile(buckets, 0.5), 0.1 + (0.4 * 1) / 5);
  assert.equal(histogramQuantile(buckets, 0.2), 0.05);
  assert.equal(histogramQuantile(buckets, 0.99), 0.5, 'in +Inf: the last finite bound');
  assert.equal(histogramQuantile([{ le: 0.1, count: 0 }, { le: Infinity, count: 0 }], 0.5), undefined);
});

test('summarizeMap counts shards, open shards and hosts; formats read well', () => {
  const map = defaultShardMapJson({ shards: 4096, pairs: 8 });
  assert.deepEqual(summarizeMap(map as never), { shards: 4096, open: 4096, hosts: 16 });
  const closed = { ranges: [{ range: [0, 9], master: 'a', open: true }, { range: [10, 19], master: 'a', slave: 'b', open: false }, { range: [20, 29], master: 'c' }] };
  assert.deepEqual(summarizeMap(closed as never), { shards: 30, open: 10, hosts: 3 });
  assert.equal(describeSequence(1795385423063), '2026-11-22T22:10:23.063Z');
  assert.equal(describeSequence(42), '42');
  assert.equal(describeSequence(-5), '-5');
  assert.equal(formatDuration(0.00025), '250 µs');
  assert.equal(formatDuration(0.0042), '4.20 ms');
  assert.equal(formatDuration(0.25), '250.0 ms');
  assert.equal(formatDuration(undefined), '–');
  assert.equal(formatRate(undefined), '–');
  assert.equal(formatRate(2.5), '2.5/s');
  assert.equal(formatRate(12345.6), '12,346/s');
});

test('pathSegment() makes text one path segment the browser keeps as is, and refuses . and .. which no URL parser keeps', () => {
  for (const key of ['../x', 'a/b', '?', '#', '%', ' ', 'é', '🦄', 'a.b.c', '...', '.x']) {
    const s = pathSegment(key);
    assert.ok(s.ok, key);
    const url = new URL(`http://x/v1/lookups/email/${s.ok ? s.segment : ''}`);
    assert.equal(url.pathname.split('/').length, 5, key);
    assert.equal(decodeURIComponent(url.pathname.split('/')[4]!), key, key);
  }
  for (const key of ['.', '..']) {
    const s = pathSegment(key);
    assert.equal(s.ok, false, key);
    if (!s.ok) assert.match(s.error, /cannot be sent in a URL path/);
    // Why: even percent-encoded, the URL standard treats them as dot segments.
    assert.equal(new URL(`http://x/v1/lookups/email/${key.replace(/\./g, '%2E')}`).pathname, key === '.' ? '/v1/lookups/email/' : '/v1/lookups/');
  }
});

test('heatGroups groups shards by host and range with sums; colours by rate when there is traffic in it, else by calls', () => {
  const ranges = [
    { range: [0, 1] as [number, number], master: 'a', reads: [5, 0], writes: [1, 0], rates: [2, 0] as number[] | null, objects: [3, null] },
    { range: [2, 3] as [number, number], master: 'b', frozenBy: 'move-x', reads: [0, 1], writes: [0, 0], rates: [0, 0.5] as number[] | null, objects: [1, 2] },
    { range: [4, 4] as [number, number], master: 'a', reads: [7], writes: [0], rates: [0] as number[] | null, objects: [0] },
  ];
  const g = heatGroups({ ranges });
  assert.equal(g.byRate, true);
  assert.equal(g.max, 2);
  assert.deepEqual(g.hosts.map((h) => [h.host, h.ranges.map((r) => r.range), h.calls, h.rate, h.objects]), [['a', [[0, 1], [4, 4]], 13, 2, 3], ['b', [[2, 3]], 1, 0.5, 3]]);
  assert.equal(g.hosts[1]!.ranges[0]!.frozenBy, 'move-x');
  assert.deepEqual(g.hosts[0]!.ranges[0]!.cells[1], { shard: 1, reads: 0, writes: 0, rate: 0, objects: null });
  // Busiest first: by rate, then by calls; idle shards left out.
  assert.deepEqual(hottestShards(g, 10).map((c) => [c.shard, c.host]), [[0, 'a'], [3, 'b'], [4, 'a']]);
  // No rate yet, or none above 0: calls since start are the scale.
  const idle = heatGroups({ ranges: ranges.map((r) => ({ ...r, rates: r.rates === null ? null : r.rates.map(() => 0) })) });
  assert.deepEqual([idle.byRate, idle.max], [false, 7]);
  const first = heatGroups({ ranges: ranges.map((r) => ({ ...r, rates: null })) });
  assert.deepEqual([first.byRate, first.max, first.hosts[0]!.rate], [false, 7, undefined]);
  assert.deepEqual(heatGroups({ ranges: [] }), { hosts: [], byRate: false, max: 0 });
});

test('heatLevel: 0 for nothing, 5 for the top, never outside 0..5', () => {
  assert.equal(heatLevel(0, 10), 0);
  assert.equal(heatLevel(5, 0), 0);
  assert.equal(heatLevel(10, 10), 5);
  assert.equal(heatLevel(0.001, 10), 1);
  assert.equal(heatLevel(20, 10), 5);
  fc.assert(fc.property(fc.double({ min: 0, max: 1e9, noNaN: true }), fc.double({ min: 0, max: 1e9, noNaN: true }), (v, max) => {
    const l = heatLevel(v, max);
    assert.ok(Number.isInteger(l) && l >= 0 && l <= 5);
    if (v > 0 && max > 0) assert.ok(l >= 1);
  }));
});

test('moveProgress shows the numbers of the phase the move is in, dashes otherwise', () => {
  const now = 100_000;
  assert.deepEqual(moveProgress({ phase: 'fenced' }, now), { progress: '–', lag: '–', updated: '–' });
  assert.deepEqual(moveProgress({ phase: 'fenced', progress: { phase: 'started', shardsDone: 1, at: now } }, now), { progress: '–', lag: '–', updated: '–' });
  assert.deepEqual(moveProgress({ phase: 'fenced', progress: { phase: 'fenced', shardsDone: 2, shardsTotal: 4, at: now - 3_400 } }, now), { progress: '2/4 shards (50%)', lag: '–', updated: '3 s ago' });
  assert.deepEqual(moveProgress({ phase: 'copied', progress: { phase: 'copied', rowsCopied: 12345, rowsTotal: 99999, lag: 0, at: now + 5_000 } }, now), { progress: '12,345/99,999 rows (12%)', lag: '0', updated: '0 s ago' });
  assert.deepEqual(moveProgress({ phase: 'copied', progress: { phase: 'copied', lag: 7, at: now } }, now).lag, '7');
  assert.equal(moveProgress({ phase: 'started', progress: { phase: 'started', shardsDone: 0, shardsTotal: 2, bytesCopied: 5 * 1024 * 1024 + 300_000, at: now } }, now).progress, '0/2 shards (0%), 5.3 MiB copied');
});

test('the moves table shows rate, ETA and the tables in flight of the phase the move is in (#29 item 6)', () => {
  const now = 100_000;
  const progress = { phase: 'started', rowsCopied: 1500, rowsTotal: 6000, bytesCopied: 3 * 1024 * 1024, rowsPerSecond: 1234.4, bytesPerSecond: 2 * 1024 * 1024, etaSeconds: 200, tables: [{ table: 'shard_0003.pins', rowsCopied: 1200, bytesCopied: 2048 }, { table: '"shard_0004"."boards"', rowsCopied: 300, bytesCopied: 100 }], at: now };
  assert.equal(moveProgress({ phase: 'started', progress }, now).progress, '1,500/6,000 rows (25%), 3.0 MiB copied, 1,234 rows/s (2.0 MiB/s), ETA 3 min 20 s');
  assert.deepEqual(moveTables({ phase: 'started', progress }), ['shard_0003.pins: 1,200 rows, 2.0 KiB', '"shard_0004"."boards": 300 rows, 100 B']);
  // Numbers of an earlier phase are not shown as the current ones.
  assert.deepEqual(moveTables({ phase: 'copied', progress }), []);
  assert.deepEqual(moveTables({ phase: 'started', progress: { phase: 'started', at: now } }), []);
  assert.deepEqual([0, 59.6, 61, 3599, 3600, 7500].map(formatSeconds), ['0 s', '1 min 0 s', '1 min 1 s', '59 min 59 s', '1 h 0 min', '2 h 5 min']);
});

test('formatBytes: bytes below 1 KiB as they are, then one decimal of the largest binary unit', () => {
  assert.deepEqual([0, 512, 1024, 1536, 10 * 1024 ** 2, 3 * 1024 ** 3 + 1, 2 * 1024 ** 5].map(formatBytes), ['0 B', '512 B', '1.0 KiB', '1.5 KiB', '10.0 MiB', '3.0 GiB', '2048.0 TiB']);
});

test('movePhaseLabel names what the mover does in each phase', () => {
  assert.deepEqual(['started', 'copied', 'frozen', 'fenced', 'switched', 'aborting', 'other'].map(movePhaseLabel), ['copying', 'catching up', 'frozen', 'fenced: verifying', 'switched', 'aborting', 'other']);
});

test('rangesByMaster sums a moon-size map up by master: every shard counted once, on its master (the dashboard\'s table past 200 ranges)', () => {
  const owner = (s: number) => (s % 97 === 0 ? (s % 1000) + 1 : Math.floor((s * 1000) / 65_536) + 1);
  const ranges: Array<{ range: [number, number]; master: string; slave?: string; open?: boolean; frozen?: { id: string } }> = [];
  for (let s = 0; s < 65_536;) {
    let e = s;
    while (e + 1 < 65_536 && owner(e + 1) === owner(s)) e++;
    ranges.push({ range: [s, e], master: `db${String(owner(s)).padStart(4, '0')}a`, slave: `db${String(owner(s)).padStart(4, '0')}b`, open: s % 2 === 0 });
    s = e + 1;
  }
  ranges[5]!.frozen = { id: 'move-x' };
  const rows = rangesByMaster(ranges);
  assert.equal(rows.length, 1000);
  assert.deepEqual(rows.map((r) => r.master), [...rows.map((r) => r.master)].sort());
  assert.equal(rows.reduce((n, r) => n + r.shards, 0), 65_536);
  assert.equal(rows.reduce((n, r) => n + r.ranges, 0), ranges.length);
  assert.equal(rows.reduce((n, r) => n + r.open, 0), ranges.filter((r) => r.open).reduce((n, r) => n + r.range[1] - r.range[0] + 1, 0));
  assert.deepEqual(rows.find((r) => r.master === ranges[5]!.master)!.frozenBy, ['move-x']);
  const first = rows[0]!;
  assert.deepEqual([first.master, first.first], ['db0001a', 0]);
});

test('verify progress in every phase (#28): the step the mover reports names what it does, with tables verified of all and a percentage', () => {
  const now = 1_700_000_000_000;
  const copied = (progress: Record<string, unknown>) => ({ phase: 'copied', progress: { phase: 'copied', at: now, ...progress } });
  assert.equal(moveStepLabel(copied({ step: 'verifying', verifiedTables: 12, verifyTables: 40 })), 'verifying before the freeze');
  assert.equal(moveProgress(copied({ step: 'verifying', verifiedTables: 12, verifyTables: 40 }), now).progress, 'verified 12/40 tables (30%)');
  assert.equal(moveStepLabel(copied({ step: 'settling', verifiedTables: 0, verifyTables: 3 })), 'settling hot chunks');
  assert.equal(moveProgress(copied({ step: 'settling', verifiedTables: 3, verifyTables: 3 }), now).progress, 'settled 3/3 tables (100%)');
  assert.equal(moveStepLabel(copied({ step: 'lag', lag: 4 })), 'lag gate: catching up');
  assert.equal(moveStepLabel(copied({ step: 'services' })), 'waiting for services');
  assert.equal(moveStepLabel({ phase: 'fenced', progress: { phase: 'fenced', step: 'verifying', at: now } }), 'fenced: verifying');
  assert.equal(moveProgress({ phase: 'fenced', progress: { phase: 'fenced', step: 'verifying', verifiedTables: 640, verifyTables: 640, at: now } }, now).progress, 'verified 640/640 tables (100%)');
  assert.equal(moveStepLabel({ phase: 'started', progress: { phase: 'started', step: 'copying', at: now } }), 'copying');
  // A step of an earlier phase says nothing about this one.
  assert.equal(moveStepLabel({ phase: 'fenced', progress: { phase: 'copied', step: 'lag', at: now } }), 'fenced: verifying');
  assert.equal(moveStepLabel({ phase: 'started' }), 'copying');
});
