import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import Fastify from 'fastify';
import pino from 'pino';
import { ShardKitError } from '../../src/errors.js';
import { installErrorHandler } from '../../src/http/error-handler.js';

test('a shed (503 OVERLOADED, SHARD_MOVING, HOST_UNKNOWN) logs one short line without a stack; a real failure keeps its stack (#34 finding 8)', async () => {
  const lines: string[] = [];
  const sink = new Writable({ write(chunk: Buffer, _enc, done) { lines.push(...chunk.toString().split('\n').filter(Boolean)); done(); } });
  const app = Fastify({ loggerInstance: pino({ level: 'info' }, sink) });
  installErrorHandler(app);
  app.get('/shed', async () => { throw new ShardKitError('OVERLOADED', 'too many requests in flight'); });
  app.get('/moving', async () => { throw new ShardKitError('SHARD_MOVING', 'shard 3 is being moved'); });
  app.get('/broken', async () => { throw new ShardKitError('INTERNAL', 'a bug'); });
  try {
    for (const url of ['/shed', '/moving']) {
      lines.length = 0;
      assert.equal((await app.inject({ method: 'GET', url })).statusCode, 503);
      const logged = lines.map((l) => JSON.parse(l) as { level: number; msg: string; err?: unknown });
      const refusal = logged.find((l) => /OVERLOADED|SHARD_MOVING/.test(l.msg))!;
      assert.ok(refusal, lines.join('\n'));
      assert.equal(refusal.err, undefined, 'no error object (stack) for a shed');
      assert.ok(JSON.stringify(refusal).length < 300, JSON.stringify(refusal));
    }
    lines.length = 0;
    assert.equal((await app.inject({ method: 'GET', url: '/broken' })).statusCode, 500);
    assert.ok(lines.some((l) => (JSON.parse(l) as { err?: { stack?: string } }).err?.stack !== undefined), 'a failure keeps its stack');
  } finally {
    await app.close();
  }
});
