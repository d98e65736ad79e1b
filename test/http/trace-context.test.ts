/**
 * Issue #33 (observability): W3C `traceparent` propagation. A caller's traceparent is the parent
 * of the request's SERVER span, the kit's storage spans are children of that span, and the
 * answer's `traceresponse` names the trace. Checked with the real OpenTelemetry SDK (in-memory
 * exporter) and its AsyncLocalStorage context manager, as an application registers them.
 */
import { after, before, test } from 'node:test';
import { connect } from 'node:net';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import type { FastifyInstance } from 'fastify';
import { defaultConfig } from '../../src/config/config.js';
import { buildApp } from '../../src/http/app.js';
import { ShardKit } from '../../src/kit/shard-kit.js';

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const contextManager = new AsyncLocalStorageContextManager();
let dir: string;
let kit: ShardKit;
let app: FastifyInstance;

before(async () => {
  context.setGlobalContextManager(contextManager.enable());
  dir = mkdtempSync(join(tmpdir(), 'shardkit-trace-'));
  kit = await ShardKit.open({ config: defaultConfig({ shards: 8, pairs: 2 }), dataDir: dir, tracer: provider.getTracer('shardkit-test') });
  app = await buildApp({ kit, dashboard: false });
});

after(async () => {
  await app.close();
  await kit.close();
  await provider.shutdown();
  context.disable();
  rmSync(dir, { recursive: true, force: true });
});

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';

function spansOfTrace(traceId: string): ReadableSpan[] {
  return exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
}

test('an incoming traceparent is the parent of the request span, whose children are the kit spans; traceresponse names the trace', async () => {
  exporter.reset();
  // A POST: its body is read outside any context, the storage call must still be a child.
  const created = await app.inject({
    method: 'POST', url: '/v1/objects/board', payload: { data: { n: 1 } },
    headers: { traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01`, tracestate: 'vendor=abc' },
  });
  assert.equal(created.statusCode, 201, created.body);
  const [, traceId, serverSpanId, flags] = String(created.headers.traceresponse).split('-');
  assert.equal(traceId, TRACE_ID);
  assert.equal(flags, '01');

  const spans = spansOfTrace(TRACE_ID);
  const server = spans.find((s) => s.name === 'POST /v1/objects/:type');
  assert.ok(server, spans.map((s) => s.name).join(', '));
  assert.equal(server.spanContext().spanId, serverSpanId);
  assert.equal(server.parentSpanContext?.spanId, CALLER_SPAN);
  assert.equal(server.spanContext().traceState?.get('vendor'), 'abc');
  assert.equal(server.attributes['http.response.status_code'], 201);
  const storage = spans.filter((s) => s.name.startsWith('shardkit.'));
  assert.ok(storage.length >= 1, spans.map((s) => s.name).join(', '));
  for (const s of storage) assert.equal(s.parentSpanContext?.spanId, serverSpanId, `${s.name} is a child of the request span`);

  // A GET: same chain.
  const id = (created.json() as { id: string }).id;
  exporter.reset();
  const read = await app.inject({ method: 'GET', url: `/v1/objects/${id}`, headers: { traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01` } });
  assert.equal(read.statusCode, 200);
  const readSpans = spansOfTrace(TRACE_ID);
  const readServer = readSpans.find((s) => s.name === 'GET /v1/objects/:id');
  assert.ok(readServer);
  assert.equal(String(read.headers.traceresponse), `00-${TRACE_ID}-${readServer.spanContext().spanId}-01`);
  const get = readSpans.filter((s) => s.name.startsWith('shardkit.'));
  assert.equal(get.length, 1);
  assert.equal(get[0]!.parentSpanContext?.spanId, readServer.spanContext().spanId);
});

test('without a traceparent, or with a malformed one, the request starts a new trace of its own', async () => {
  for (const header of [undefined, 'garbage', `00-${'0'.repeat(32)}-${CALLER_SPAN}-01`, `ff-${TRACE_ID}-${CALLER_SPAN}-01`, `00-${TRACE_ID}-${CALLER_SPAN}-01-extra`]) {
    exporter.reset();
    const res = await app.inject({ method: 'GET', url: '/v1/topology', headers: header === undefined ? {} : { traceparent: header } });
    assert.equal(res.statusCode, 200);
    const [version, traceId, spanId] = String(res.headers.traceresponse).split('-');
    assert.equal(version, '00');
    assert.notEqual(traceId, TRACE_ID, String(header));
    const server = exporter.getFinishedSpans().find((s) => s.spanContext().spanId === spanId);
    assert.ok(server, String(header));
    assert.equal(server.parentSpanContext, undefined, `${String(header)}: a root span`);
  }
});

test('a 404 answer is on its span; a path no route has is traced as unmatched', async () => {
  exporter.reset();
  const missing = await app.inject({ method: 'GET', url: '/v1/objects/1', headers: { traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01` } });
  assert.equal(missing.statusCode, 404);
  const server = spansOfTrace(TRACE_ID).find((s) => s.name === 'GET /v1/objects/:id');
  assert.equal(server?.attributes['http.response.status_code'], 404);
  exporter.reset();
  await app.inject({ method: 'GET', url: '/no/such/path' });
  assert.ok(exporter.getFinishedSpans().some((s) => s.name === 'GET unmatched'));
});

// The timeout is a hang guard: without the abort hook the span never ends and the wait below would not return.
test('a caller that hangs up before the answer still ends its span, with an error status', { timeout: 60_000 }, async () => {
  const dirOf = mkdtempSync(join(tmpdir(), 'shardkit-trace-abort-'));
  const abortKit = await ShardKit.open({ config: defaultConfig({ shards: 8, pairs: 2 }), dataDir: dirOf, tracer: provider.getTracer('shardkit-test') });
  const server = await buildApp({ kit: abortKit, dashboard: false });
  try {
    await server.listen({ port: 0, host: '127.0.0.1' });
    const port = (server.server.address() as { port: number }).port;
    exporter.reset();
    // Headers announce a body that never comes; once the server has the request, hang up.
    const received = new Promise<void>((resolve) => server.server.once('request', () => resolve()));
    const socket = connect(port, '127.0.0.1');
    socket.write(`POST /v1/objects/board HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\ntraceparent: 00-${TRACE_ID}-${CALLER_SPAN}-01\r\n\r\n{"data":`);
    await received;
    socket.destroy();
    while (!exporter.getFinishedSpans().some((s) => s.spanContext().traceId === TRACE_ID)) await new Promise((r) => setImmediate(r));
    const span = spansOfTrace(TRACE_ID).find((s) => s.name === 'POST /v1/objects/:type');
    assert.ok(span);
    assert.equal(span.status.code, 2);
    assert.match(String(span.status.message), /closed the connection/);
  } finally {
    await server.close();
    await abortKit.close();
    rmSync(dirOf, { recursive: true, force: true });
  }
});

test('an app without a tracer sends no traceresponse and registers no tracing hooks', async () => {
  const plainDir = mkdtempSync(join(tmpdir(), 'shardkit-trace-off-'));
  const plainKit = await ShardKit.open({ config: defaultConfig({ shards: 8, pairs: 2 }), dataDir: plainDir });
  const plain = await buildApp({ kit: plainKit, dashboard: false });
  try {
    const res = await plain.inject({ method: 'GET', url: '/v1/topology', headers: { traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01` } });
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers.traceresponse, undefined);
    assert.equal(trace.getActiveSpan(), undefined);
  } finally {
    await plain.close();
    await plainKit.close();
    rmSync(plainDir, { recursive: true, force: true });
  }
});
