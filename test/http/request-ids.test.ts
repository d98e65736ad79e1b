/**
 * Issue #33 (observability): request ids were a per-process counter (`req-1`) that ignored the
 * caller's `X-Request-Id`. A sane incoming id is kept, anything else replaced by a random UUID;
 * the id goes back in `X-Request-Id` and is the `reqId` of the request's log lines.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { makeApp } from './http-fixture.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

test('X-Request-Id: a sane incoming id is echoed and logged; a missing or insane one becomes a fresh UUID', async () => {
  const lines: Array<{ reqId?: string; msg: string }> = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const l of chunk.toString().split('\n')) if (l !== '') lines.push(JSON.parse(l) as { reqId?: string; msg: string });
      done();
    },
  });
  const f = await makeApp({ app: { loggerInstance: pino({ level: 'info' }, sink) } });
  try {
    const kept = await f.app.inject({ method: 'GET', url: '/v1/topology', headers: { 'x-request-id': 'lb-7f3a.9:trace=1' } });
    assert.equal(kept.headers['x-request-id'], 'lb-7f3a.9:trace=1');
    const logged = lines.filter((l) => l.reqId === 'lb-7f3a.9:trace=1').map((l) => l.msg);
    assert.deepEqual(logged, ['incoming request', 'request completed']);
    // Errors carry it too: the client can quote it.
    const missing = await f.app.inject({ method: 'GET', url: '/v1/objects/1', headers: { 'x-request-id': 'err-1' } });
    assert.equal(missing.statusCode, 404);
    assert.equal(missing.headers['x-request-id'], 'err-1');

    const seen = new Set<string>();
    for (const incoming of [undefined, '', 'x'.repeat(129), 'has space', 'new\\nline', '<script>', 'ünï']) {
      const res = await f.app.inject({ method: 'GET', url: '/v1/topology', headers: incoming === undefined ? {} : { 'x-request-id': incoming } });
      const id = String(res.headers['x-request-id']);
      assert.match(id, UUID, `${JSON.stringify(incoming)} -> ${id}`);
      assert.ok(!seen.has(id), 'a fresh id each time');
      seen.add(id);
    }
  } finally {
    await f.cleanup();
  }
});
