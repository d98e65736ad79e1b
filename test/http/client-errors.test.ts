/**
 * Requests refused by Node's HTTP parser, over a real socket (app.inject never meets the parser):
 * they get the same `{"error":{"code","message"}}` body as every other error, and the documented
 * 1000-ID multi-get fits in the header limit.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { Duplex } from 'node:stream';
import { listeningApp } from './http-fixture.js';
import { clientErrorHandler, MAX_HEADER_BYTES } from '../../src/http/error-handler.js';
import { MAX_MULTI_GET } from '../../src/http/routes/object-routes.js';
import { defaultShardMapJson, ShardMap } from '../../src/topology/shard-map.js';

/** Sends raw bytes and reads until the server closes: status code, headers text and body. */
function rawRequest(port: number, bytes: string | Buffer): Promise<{ status: number; head: string; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const split = text.indexOf('\r\n\r\n');
      const head = text.slice(0, split);
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]), head, body: text.slice(split + 4) });
    });
    socket.end(bytes);
  });
}

test('requests the HTTP parser refuses get 4xx with a stable code and our error body, and nothing is written', async () => {
  const f = await listeningApp();
  const port = f.port;
  try {
    const user = await f.kit.objects.create('user', {});
    const cases: Array<[string, string | Buffer, number, string]> = [
      ['a request line over the header limit', `GET /v1/objects?ids=${'1,'.repeat(MAX_HEADER_BYTES / 2)}1 HTTP/1.1\r\nHost: x\r\n\r\n`, 431, 'HEADERS_TOO_LARGE'],
      ['a lookup key path over the header limit', `PUT /v1/lookups/email/${'k'.repeat(MAX_HEADER_BYTES + 10)} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}`, 431, 'HEADERS_TOO_LARGE'],
      ['a non-numeric Content-Length', `PUT /v1/lookups/email/k HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: abc\r\n\r\n{"id":"${user.id}"}`, 400, 'MALFORMED_REQUEST'],
      ['a raw space in the path', `GET /v1/lookups/email/a b HTTP/1.1\r\nHost: x\r\n\r\n`, 400, 'MALFORMED_REQUEST'],
      ['a raw NUL in the path', Buffer.from(`GET /v1/lookups/email/a\u0000b HTTP/1.1\r\nHost: x\r\n\r\n`, 'latin1'), 400, 'MALFORMED_REQUEST'],
      ['a header without a colon', `GET /healthz HTTP/1.1\r\nHost: x\r\nnot a header\r\n\r\n`, 400, 'MALFORMED_REQUEST'],
      // Answered by Node with an empty body before (a review, session 12).
      ['HTTP/1.1 without a Host header', 'GET /healthz HTTP/1.1\r\n\r\n', 400, 'MALFORMED_REQUEST'],
      ['an Expect other than 100-continue', `PUT /v1/lookups/email/k HTTP/1.1\r\nHost: x\r\nExpect: garbage\r\nContent-Type: application/json\r\nContent-Length: ${`{"id":"${user.id}"}`.length}\r\n\r\n{"id":"${user.id}"}`, 417, 'EXPECTATION_FAILED'],
      ['not HTTP at all', '\u0016\u0003\u0001\u0002\u0000\u0001\u0000\u0001\u00fc\u0003\u0003', 400, 'MALFORMED_REQUEST'],
    ];
    for (const [what, bytes, status, code] of cases) {
      const res = await rawRequest(port, bytes);
      assert.equal(res.status, status, `${what}: ${res.head}`);
      assert.match(res.head, /content-type: application\/json/i, what);
      const body = JSON.parse(res.body) as { error: { code: string; message: string } };
      assert.deepEqual(Object.keys(body), ['error'], what);
      assert.equal(body.error.code, code, what);
      assert.equal(typeof body.error.message, 'string', what);
      assert.doesNotMatch(res.body, /\bat .+:\d+:\d+/, `${what}: no stack trace`);
    }
    assert.equal((await f.app.inject({ method: 'GET', url: '/v1/lookups/email/k' })).statusCode, 404, 'the refused PUT wrote nothing');
    // The service goes on serving after all of them.
    assert.equal((await fetch(`http://127.0.0.1:${port}/healthz`)).status, 200);
  } finally {
    await f.cleanup();
  }
});

test(`a multi-get of ${MAX_MULTI_GET} IDs, the documented maximum, fits in the request line`, async () => {
  const f = await listeningApp({ shardMap: ShardMap.fromJSON(defaultShardMapJson({ shards: 4096, pairs: 2 })) });
  const port = f.port;
  try {
    const pins = [];
    for (let i = 0; i < 10; i++) pins.push(await f.kit.objects.create('pin', { i }, { shard: 4000 + i }));
    // 1000 IDs of 18 digits (shards >= 4000 make them long): a URL of ~19 KB, over Node's 16 KiB default.
    const ids = Array.from({ length: MAX_MULTI_GET }, (_, i) => pins[i % pins.length]!.id.toString());
    const url = `http://127.0.0.1:${port}/v1/objects?ids=${ids.join(',')}`;
    assert.ok(url.length > 16 * 1024, `URL of ${url.length} bytes`);
    const res = await fetch(url);
    assert.equal(res.status, 200);
    const body = (await res.json()) as { objects: Array<{ id: string; data: { i: number } }> };
    assert.equal(body.objects.length, MAX_MULTI_GET);
    assert.deepEqual(body.objects.slice(0, 12).map((o) => o.data.i), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1]);
  } finally {
    await f.cleanup();
  }
});

test('a malformed request pipelined behind a valid one: the valid one gets its own answer first, then the 400', async () => {
  const f = await listeningApp();
  const port = f.port;
  try {
    const user = await f.kit.objects.create('user', {});
    const body = JSON.stringify({ id: user.id.toString() });
    const res = await rawRequest(port, `PUT /v1/lookups/username/pipelined HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}GET /a b HTTP/1.1\r\nHost: x\r\n\r\n`);
    // Two responses on the connection, in order: 204 for the PUT (which was carried out), then the 400.
    const all = `${res.head}\r\n\r\n${res.body}`;
    const statuses = [...all.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => Number(m[1]));
    assert.deepEqual(statuses, [204, 400], all);
    assert.match(all, /"code":"MALFORMED_REQUEST"/);
    assert.equal(await f.kit.lookups.get('username', 'pipelined'), user.id);
  } finally {
    await f.cleanup();
  }
});

test('the parser\'s other refusals: a request timeout is 408 REQUEST_TIMEOUT, oversize chunk extensions 413, a reset connection gets nothing', () => {
  const answer = (code: string, closes = true): string => {
    let written = '';
    let destroyed = false;
    const socket = new Duplex({ read() {}, write(chunk: Buffer, _enc, cb) { written += chunk.toString(); cb(); } });
    socket.destroy = ((() => { destroyed = true; return socket; }) as unknown) as typeof socket.destroy;
    clientErrorHandler(Object.assign(new Error(code), { code }), socket);
    assert.equal(destroyed, closes, `${code}: the connection is closed by us: ${closes}`);
    return written;
  };
  const timeout = answer('ERR_HTTP_REQUEST_TIMEOUT');
  assert.match(timeout, /^HTTP\/1\.1 408 Request Timeout\r\n/);
  assert.match(timeout, /\r\n\r\n\{"error":\{"code":"REQUEST_TIMEOUT","message":"[^"]+"\}\}$/);
  assert.match(answer('HPE_CHUNK_EXTENSIONS_OVERFLOW'), /^HTTP\/1\.1 413 [^]*"code":"PAYLOAD_TOO_LARGE"/);
  assert.match(answer('HPE_INVALID_METHOD'), /^HTTP\/1\.1 400 [^]*"code":"MALFORMED_REQUEST","message":"the request is not valid HTTP\/1\.1 \(HPE_INVALID_METHOD\)"/);
  assert.equal(answer('ECONNRESET', false), '', 'a reset connection is left alone');
});
