/**
 * Observability of the kit (issue #33 item 4): one 'operation' event per storage call (op, fleet,
 * shard, host, duration, error), and a span per call through a real OpenTelemetry tracer
 * (@opentelemetry/sdk-trace-base with an in-memory exporter). Without a listener or a tracer
 * nothing is timed.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { defaultConfig } from '../../src/config/config.js';
import { isShardKitError } from '../../src/errors.js';
import { ShardKit } from '../../src/kit/shard-kit.js';
import type { OperationEvent } from '../../src/kit/operation-events.js';

async function withKit(fn: (kit: ShardKit) => Promise<void>, options: Partial<Parameters<typeof ShardKit.open>[0]> = {}): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-op-events-'));
  const kit = await ShardKit.open({ config: defaultConfig({ shards: 8, pairs: 2 }), dataDir: dir, ...options });
  try {
    await fn(kit);
  } finally {
    await kit.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

test("'operation' events: one per storage call, with op, shard, host and a duration; none once the listener is gone", async () => {
  await withKit(async (kit) => {
    const events: OperationEvent[] = [];
    const on = (e: OperationEvent) => events.push(e);
    kit.events.on('operation', on);
    const board = await kit.objects.create('board', { n: 1 }, { shard: 3 });
    await kit.objects.get(board.id);
    await assert.rejects(kit.objects.get(board.id + 1n), (err) => isShardKitError(err, 'NOT_FOUND'));
    kit.events.off('operation', on);
    await kit.objects.get(board.id);
    assert.equal(events.length, 3, JSON.stringify(events.map((e) => e.op)));
    for (const e of events) {
      assert.equal(e.fleet, 'objects');
      assert.equal(e.shard, 3);
      assert.equal(e.host, (await kit.shardMap()).locate(3).master);
      assert.ok(e.durationMs >= 0 && Number.isFinite(e.durationMs));
    }
    // An absent row is an answer (NOT_FOUND above the storage call), not a failed call.
    for (const e of events) assert.equal(e.error, undefined);
    assert.notEqual(events[0]!.op, events[1]!.op, 'a create and a read are different operations');
  });
});

test('a real OpenTelemetry tracer gets one span per storage call, ended, with shard and host attributes', async () => {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  await withKit(async (kit) => {
    const board = await kit.objects.create('board', { n: 1 }, { shard: 5 });
    await kit.objects.get(board.id);
    const spans = exporter.getFinishedSpans();
    assert.equal(spans.length, 2);
    for (const s of spans) {
      assert.match(s.name, /^shardkit\./);
      assert.equal(s.attributes['shardkit.shard'], 5);
      assert.equal(s.attributes['shardkit.fleet'], 'objects');
      assert.equal(s.attributes['shardkit.host'], (await kit.shardMap()).locate(5).master);
      assert.equal(s.status.code, 0);
    }
  }, { tracer: provider.getTracer('shardkit-test') });
  await provider.shutdown();
});
