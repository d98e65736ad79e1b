/**
 * The bad-input list against every route: malformed IDs (non-numeric, negative, more than 64
 * bits, reserved bits set, unknown type or shard), wrong JSON, oversize bodies, hostile names
 * and keys. Each must get a 4xx with a stable code and no stack trace, and write nothing.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { InjectOptions } from 'fastify';
import { pinterestId } from '../../src/ids/pinterest-id.js';
import { snapshot } from '../kit/kit-fixture.js';
import { assertError, createObject, failedCases, makeApp, type BadCase } from './http-fixture.js';
import { encodeCursor } from '../../src/kit/cursor-codec.js';

type Case = BadCase;

const enc = encodeURIComponent;

/** Malformed IDs and the code each one must get, whatever route it is sent to. */
const BAD_IDS: Array<[string, number, string]> = [
  ['abc', 400, 'INVALID_ID'],
  ['-1', 400, 'INVALID_ID'],
  ['1.5', 400, 'INVALID_ID'],
  ['1e3', 400, 'INVALID_ID'],
  ['0x10', 400, 'INVALID_ID'],
  ['01', 400, 'INVALID_ID'],
  [' 7', 400, 'INVALID_ID'],
  ['18446744073709551616', 400, 'INVALID_ID'], // 2^64: more than 64 bits
  ['99999999999999999999999999', 400, 'INVALID_ID'],
  [String(1n << 62n), 400, 'INVALID_ID'], // a reserved bit set
  [String((1n << 64n) - 1n), 400, 'INVALID_ID'],
  ["1'; DROP TABLE pins; --", 400, 'INVALID_ID'],
  [pinterestId.encode({ shard: 3, type: 999, localId: 1 }).toString(), 404, 'UNKNOWN_TYPE'],
  [pinterestId.encode({ shard: 60000, type: 1, localId: 1 }).toString(), 404, 'UNKNOWN_SHARD'],
];


/** A JSON object nesting `depth` objects deep (the outermost counts as 1). */
function nested(depth: number): string {
  return `${'{"a":'.repeat(depth - 1)}{}${'}'.repeat(depth - 1)}`;
}

test('every route answers bad input with 4xx, a stable code, no stack trace, and writes nothing', async () => {
  const f = await makeApp({ bodyLimit: 64 * 1024 });
  try {
    const user = await createObject(f.app, 'user', { name: 'u' });
    const board = await createObject(f.app, 'board', { name: 'b' });
    const pin = await createObject(f.app, 'pin', { name: 'p' }, { near: board.id });
    const cursor = ((await f.app.inject({ method: 'GET', url: `/v1/mappings/board_has_pins/${board.id}?order=asc&limit=1` })).json() as { next: string | null }).next;
    assert.equal(cursor, null);
    const ascCursor = Buffer.from([1, 0, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 7]).toString('base64url');
    // A well-formed cursor of another list (the same board's boards-of-user mapping, another board).
    const foreignCursors = [encodeCursor({ sequence: 5, toId: 7n }, 'desc', { mapping: 'user_has_boards', from: board.id }), encodeCursor({ sequence: 5, toId: 7n }, 'desc', { mapping: 'board_has_pins', from: board.id + 1n })];
    const before = snapshot(f.root);
    const big = 'x'.repeat(80 * 1024);
    const cases: Case[] = [];
    const json = (method: InjectOptions['method'], url: string, payload: unknown, headers: Record<string, string> = {}): InjectOptions =>
      ({ method, url, payload: typeof payload === 'string' ? payload : JSON.stringify(payload), headers: { 'content-type': 'application/json', ...headers } });

    for (const [id, status, code] of BAD_IDS) {
      const i = enc(id);
      cases.push(
        [`GET object ${id}`, { method: 'GET', url: `/v1/objects/${i}` }, status, code],
        // A well-formed ID of an unknown type or shard names nothing: left out of a multi-get (contract.test.ts).
        ...(status === 400 ? [[`GET objects ids=${id}`, { method: 'GET', url: `/v1/objects?ids=${pin.id},${i}` }, status, code] as Case] : []),
        [`PATCH object ${id}`, json('PATCH', `/v1/objects/${i}`, { a: 1 }), status, code],
        [`DELETE object ${id}`, { method: 'DELETE', url: `/v1/objects/${i}` }, status, code],
        [`DELETE hard object ${id}`, { method: 'DELETE', url: `/v1/objects/${i}?hard=true` }, status, code],
        [`POST near ${id}`, json('POST', '/v1/objects/pin', { data: {}, near: id }), status, code],
        [`PUT mapping from ${id}`, json('PUT', `/v1/mappings/board_has_pins/${i}/${pin.id}`, {}), status, code],
        [`PUT mapping to ${id}`, json('PUT', `/v1/mappings/board_has_pins/${board.id}/${i}`, {}), status, code],
        [`DELETE mapping from ${id}`, { method: 'DELETE', url: `/v1/mappings/board_has_pins/${i}/${pin.id}` }, status, code],
        [`DELETE mapping to ${id}`, { method: 'DELETE', url: `/v1/mappings/board_has_pins/${board.id}/${i}` }, status, code],
        [`GET mapping ${id}`, { method: 'GET', url: `/v1/mappings/board_has_pins/${i}` }, status, code],
        [`GET join ${id}`, { method: 'GET', url: `/v1/mappings/board_has_pins/${i}/objects` }, status, code],
        [`GET count ${id}`, { method: 'GET', url: `/v1/mappings/board_has_pins/${i}/count` }, status, code],
        [`PUT lookup id ${id}`, json('PUT', '/v1/lookups/email/k', { id }), status, code],
      );
    }

    cases.push(
      // Objects: create.
      ['POST unknown type', json('POST', '/v1/objects/pinz', { data: {} }), 404, 'UNKNOWN_TYPE'],
      ['POST hostile type', json('POST', `/v1/objects/${enc("pin'; --")}`, { data: {} }), 404, 'UNKNOWN_TYPE'],
      ['POST __proto__ type', json('POST', '/v1/objects/__proto__', { data: {} }), 404, 'UNKNOWN_TYPE'],
      ['POST long type', json('POST', `/v1/objects/${'t'.repeat(500)}`, { data: {} }), 400, 'INVALID_ARGUMENT'],
      ['POST not JSON', json('POST', '/v1/objects/pin', '{"data": {'), 400, 'INVALID_JSON'],
      ['POST empty body', json('POST', '/v1/objects/pin', ''), 400, 'INVALID_JSON'],
      ['POST JSON array', json('POST', '/v1/objects/pin', [1, 2]), 400, 'INVALID_ARGUMENT'],
      ['POST JSON string', json('POST', '/v1/objects/pin', '"data"'), 400, 'INVALID_ARGUMENT'],
      ['POST no data', json('POST', '/v1/objects/pin', {}), 400, 'INVALID_ARGUMENT'],
      // Bytes that are not UTF-8 were decoded to U+FFFD and stored so ("\xff\xfe" became "\ufffd\ufffd").
      ['POST value not UTF-8', { ...json('POST', '/v1/objects/pin', ''), payload: Buffer.concat([Buffer.from('{"data":{"n":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}}')]) }, 400, 'INVALID_JSON'],
      ['POST name not UTF-8', { ...json('POST', '/v1/objects/pin', ''), payload: Buffer.concat([Buffer.from('{"data":{"'), Buffer.from([0xc3]), Buffer.from('":1}}')]) }, 400, 'INVALID_JSON'],
      ['POST UTF-8 of a lone surrogate', { ...json('POST', '/v1/objects/pin', ''), payload: Buffer.concat([Buffer.from('{"data":{"n":"'), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('"}}')]) }, 400, 'INVALID_JSON'],
      ['PATCH value not UTF-8', { ...json('PATCH', `/v1/objects/${pin.id}`, ''), payload: Buffer.concat([Buffer.from('{"n":"'), Buffer.from([0x80]), Buffer.from('"}')]) }, 400, 'INVALID_JSON'],
      // A name twice in one object: JSON.parse keeps the last, a proxy may keep the first.
      ['POST data twice', json('POST', '/v1/objects/pin', '{"data":{"a":1},"data":{"b":2}}'), 400, 'INVALID_JSON'],
      ['POST nested name twice', json('POST', '/v1/objects/pin', '{"data":{"x":[{"a":1,"a":2}]}}'), 400, 'INVALID_JSON'],
      ['POST name twice, once escaped', json('POST', '/v1/objects/pin', '{"data":{"a":1,"\\u0061":2}}'), 400, 'INVALID_JSON'],
      ['PATCH name twice', json('PATCH', `/v1/objects/${pin.id}`, '{"n":1,"n":null}', { 'content-type': 'application/merge-patch+json' }), 400, 'INVALID_JSON'],
      ['PUT sequence twice', json('PUT', `/v1/mappings/board_has_pins/${board.id}/${pin.id}`, '{"sequence":1,"sequence":2}'), 400, 'INVALID_JSON'],
      ['POST data null', json('POST', '/v1/objects/pin', { data: null }), 400, 'INVALID_ARGUMENT'],
      ['POST data array', json('POST', '/v1/objects/pin', { data: [1] }), 400, 'INVALID_ARGUMENT'],
      ['POST data string', json('POST', '/v1/objects/pin', { data: 'x' }), 400, 'INVALID_ARGUMENT'],
      ['POST data.active false', json('POST', '/v1/objects/pin', { data: { active: false } }), 400, 'INVALID_ARGUMENT'],
      ['POST unknown field', json('POST', '/v1/objects/pin', { data: {}, owner: 1 }), 400, 'INVALID_ARGUMENT'],
      ['POST near as number', json('POST', '/v1/objects/pin', `{"data":{},"near":${board.id}}`), 400, 'INVALID_ID'],
      ['POST near and shard', json('POST', '/v1/objects/pin', { data: {}, near: board.id, shard: 1 }), 400, 'INVALID_ARGUMENT'],
      ['POST shard -1', json('POST', '/v1/objects/pin', { data: {}, shard: -1 }), 400, 'INVALID_ARGUMENT'],
      ['POST shard 70000', json('POST', '/v1/objects/pin', { data: {}, shard: 70000 }), 400, 'INVALID_ARGUMENT'],
      ['POST shard 1.5', json('POST', '/v1/objects/pin', { data: {}, shard: 1.5 }), 400, 'INVALID_ARGUMENT'],
      ['POST shard x', json('POST', '/v1/objects/pin', { data: {}, shard: 'x' }), 400, 'INVALID_ARGUMENT'],
      ['POST shard outside the map', json('POST', '/v1/objects/pin', { data: {}, shard: 100 }), 404, 'UNKNOWN_SHARD'],
      ['POST __proto__ in data', json('POST', '/v1/objects/pin', '{"data":{"__proto__":{"polluted":true}}}'), 400, 'INVALID_JSON'],
      ['POST constructor.prototype in data', json('POST', '/v1/objects/pin', '{"data":{"constructor":{"prototype":{"x":1}}}}'), 400, 'INVALID_JSON'],
      ['POST oversize body', json('POST', '/v1/objects/pin', { data: { big } }), 413, 'PAYLOAD_TOO_LARGE'],
      ['POST text/plain', { method: 'POST', url: '/v1/objects/pin', payload: '{"data":{}}', headers: { 'content-type': 'text/plain' } }, 415, 'UNSUPPORTED_MEDIA_TYPE'],
      // A body the service would misread (a review, session 12): compressed, or not UTF-8.
      ['POST Content-Encoding gzip', json('POST', '/v1/objects/pin', { data: {} }, { 'content-encoding': 'gzip' }), 415, 'UNSUPPORTED_MEDIA_TYPE'],
      ['PATCH Content-Encoding br', json('PATCH', `/v1/objects/${pin.id}`, { a: 2 }, { 'content-encoding': 'br' }), 415, 'UNSUPPORTED_MEDIA_TYPE'],
      ['POST charset=utf-16', json('POST', '/v1/objects/pin', { data: {} }, { 'content-type': 'application/json; charset=utf-16' }), 415, 'UNSUPPORTED_MEDIA_TYPE'],
      ['PUT lookup charset="latin1"', json('PUT', '/v1/lookups/email/cs', { id: user.id }, { 'content-type': 'application/json; charset="latin1"' }), 415, 'UNSUPPORTED_MEDIA_TYPE'],
      // Defect 8 of issue 16: merge-patch+json is for PATCH only.
      ['POST merge-patch content type', json('POST', '/v1/objects/pin', { data: {} }, { 'content-type': 'application/merge-patch+json' }), 415, 'UNSUPPORTED_MEDIA_TYPE'],
      ['POST merge-patch content type with bad JSON', json('POST', '/v1/objects/pin', '{', { 'content-type': 'application/merge-patch+json' }), 415, 'UNSUPPORTED_MEDIA_TYPE'],
      ['PUT lookup merge-patch content type', json('PUT', '/v1/lookups/email/mp', { id: user.id }, { 'content-type': 'application/merge-patch+json' }), 415, 'UNSUPPORTED_MEDIA_TYPE'],
      ['PUT lookup ?key= merge-patch content type', json('PUT', '/v1/lookups/email?key=mp', { id: user.id }, { 'content-type': 'application/merge-patch+json; charset=utf-8' }), 415, 'UNSUPPORTED_MEDIA_TYPE'],
      ['PUT mapping merge-patch content type', json('PUT', `/v1/mappings/board_has_pins/${board.id}/${pin.id}`, {}, { 'content-type': 'application/merge-patch+json' }), 415, 'UNSUPPORTED_MEDIA_TYPE'],
      // Defect 7: integers JSON numbers cannot carry exactly are refused, not rounded.
      ['POST data 12345678901234567890', json('POST', '/v1/objects/pin', '{"data":{"n":12345678901234567890}}'), 400, 'INVALID_ARGUMENT'],
      ['POST data 2^53 in an array', json('POST', '/v1/objects/pin', '{"data":{"n":[1,{"m":9007199254740992}]}}'), 400, 'INVALID_ARGUMENT'],
      ['POST data -2^53', json('POST', '/v1/objects/pin', '{"data":{"n":-9007199254740992}}'), 400, 'INVALID_ARGUMENT'],
      ['POST data 2^53+1 after an escaped quote', json('POST', '/v1/objects/pin', '{"data":{"s\\"":9007199254740993}}'), 400, 'INVALID_ARGUMENT'],
      ['PATCH 12345678901234567890', json('PATCH', `/v1/objects/${pin.id}`, '{"n":12345678901234567890}'), 400, 'INVALID_ARGUMENT'],
      ['PATCH nested 2^64', json('PATCH', `/v1/objects/${pin.id}`, '{"a":{"b":[18446744073709551616]}}', { 'content-type': 'application/merge-patch+json' }), 400, 'INVALID_ARGUMENT'],
      // Objects: read.
      ['GET objects without ids', { method: 'GET', url: '/v1/objects' }, 400, 'INVALID_ARGUMENT'],
      ['GET objects ids empty', { method: 'GET', url: '/v1/objects?ids=' }, 400, 'INVALID_ID'],
      ['GET objects ids trailing comma', { method: 'GET', url: `/v1/objects?ids=${pin.id},` }, 400, 'INVALID_ID'],
      ['GET objects 1001 ids', { method: 'GET', url: `/v1/objects?ids=${Array(1001).fill(pin.id).join(',')}` }, 400, 'INVALID_ARGUMENT'],
      ['GET objects unknown param', { method: 'GET', url: `/v1/objects?ids=${pin.id}&x=1` }, 400, 'INVALID_ARGUMENT'],
      ['GET malformed percent-encoding', { method: 'GET', url: '/v1/objects/%E0%A4%A' }, 400, 'INVALID_ARGUMENT'],
      // Objects: patch and delete.
      ['PATCH not JSON', json('PATCH', `/v1/objects/${pin.id}`, 'nope'), 400, 'INVALID_JSON'],
      ['PATCH array', json('PATCH', `/v1/objects/${pin.id}`, [{ op: 'add' }]), 400, 'INVALID_ARGUMENT'],
      ['PATCH null', json('PATCH', `/v1/objects/${pin.id}`, 'null'), 400, 'INVALID_ARGUMENT'],
      ['PATCH json-patch content type', json('PATCH', `/v1/objects/${pin.id}`, [], { 'content-type': 'application/json-patch+json' }), 415, 'UNSUPPORTED_MEDIA_TYPE'],
      ['PATCH active false', json('PATCH', `/v1/objects/${pin.id}`, { active: false }, { 'content-type': 'application/merge-patch+json' }), 400, 'INVALID_ARGUMENT'],
      ['PATCH __proto__', json('PATCH', `/v1/objects/${pin.id}`, '{"__proto__":{"x":1}}', { 'content-type': 'application/merge-patch+json' }), 400, 'INVALID_JSON'],
      ['PATCH oversize', json('PATCH', `/v1/objects/${pin.id}`, { big }, { 'content-type': 'application/merge-patch+json' }), 413, 'PAYLOAD_TOO_LARGE'],
      // Nesting: 5000 levels once overflowed the recursive merge patch (500); 101 is one too many.
      ['PATCH nested 5000 deep', json('PATCH', `/v1/objects/${pin.id}`, `{"x":${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}}`, { 'content-type': 'application/merge-patch+json' }), 400, 'INVALID_ARGUMENT'],
      ['PATCH nested 101 deep', json('PATCH', `/v1/objects/${pin.id}`, nested(101), { 'content-type': 'application/merge-patch+json' }), 400, 'INVALID_ARGUMENT'],
      ['PATCH arrays 101 deep', json('PATCH', `/v1/objects/${pin.id}`, `{"x":${'['.repeat(100)}${']'.repeat(100)}}`), 400, 'INVALID_ARGUMENT'],
      ['PATCH 1e400', json('PATCH', `/v1/objects/${pin.id}`, '{"n":1e400}'), 400, 'INVALID_ARGUMENT'],
      ['POST data nested 5000 deep', json('POST', '/v1/objects/pin', `{"data":{"x":${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}}}`), 400, 'INVALID_ARGUMENT'],
      ['POST data nested 101 deep', json('POST', '/v1/objects/pin', `{"data":${nested(101)}}`), 400, 'INVALID_ARGUMENT'],
      ['POST data 1e400', json('POST', '/v1/objects/pin', '{"data":{"n":1e400}}'), 400, 'INVALID_ARGUMENT'],
      ['POST data -1e999 in an array', json('POST', '/v1/objects/pin', '{"data":{"n":[1,-1e999]}}'), 400, 'INVALID_ARGUMENT'],
      ['PATCH stale If-Match', json('PATCH', `/v1/objects/${pin.id}`, { a: 1 }, { 'if-match': '"stale"' }), 412, 'PRECONDITION_FAILED'],
      // Defect 4: a malformed If-Match is the client's mistake (400), not "has changed" (412).
      ['PATCH unquoted If-Match', json('PATCH', `/v1/objects/${pin.id}`, { a: 1 }, { 'if-match': pin.etag.replaceAll('"', '') }), 400, 'INVALID_ARGUMENT'],
      ['PATCH If-Match with a stray quote', json('PATCH', `/v1/objects/${pin.id}`, { a: 1 }, { 'if-match': `${pin.etag}"` }), 400, 'INVALID_ARGUMENT'],
      ['PATCH If-Match of a tag and garbage', json('PATCH', `/v1/objects/${pin.id}`, { a: 1 }, { 'if-match': `${pin.etag}, x` }), 400, 'INVALID_ARGUMENT'],
      ['PATCH weak If-Match', json('PATCH', `/v1/objects/${pin.id}`, { a: 1 }, { 'if-match': `W/${pin.etag}` }), 412, 'PRECONDITION_FAILED'],
      ['PATCH quoted "*" If-Match', json('PATCH', `/v1/objects/${pin.id}`, { a: 1 }, { 'if-match': '"*"' }), 412, 'PRECONDITION_FAILED'],
      ['GET unquoted If-None-Match', { method: 'GET', url: `/v1/objects/${pin.id}`, headers: { 'if-none-match': 'abc' } }, 400, 'INVALID_ARGUMENT'],
      // Defect 3: DELETE honours If-Match (412, nothing deleted; the snapshot below checks).
      ['DELETE stale If-Match', { method: 'DELETE', url: `/v1/objects/${pin.id}`, headers: { 'if-match': '"stale"' } }, 412, 'PRECONDITION_FAILED'],
      ['DELETE hard stale If-Match', { method: 'DELETE', url: `/v1/objects/${pin.id}?hard=true`, headers: { 'if-match': '"stale"' } }, 412, 'PRECONDITION_FAILED'],
      ['DELETE weak If-Match', { method: 'DELETE', url: `/v1/objects/${pin.id}`, headers: { 'if-match': `W/${pin.etag}` } }, 412, 'PRECONDITION_FAILED'],
      ['DELETE unquoted If-Match', { method: 'DELETE', url: `/v1/objects/${pin.id}`, headers: { 'if-match': 'stale' } }, 400, 'INVALID_ARGUMENT'],
      // `*` is the whole header or nothing: mixed with tags it skipped the check (a lost update).
      ['PATCH If-Match of a tag and *', json('PATCH', `/v1/objects/${pin.id}`, { a: 1 }, { 'if-match': '"zz", *' }), 400, 'INVALID_ARGUMENT'],
      ['PATCH If-Match of * and a tag', json('PATCH', `/v1/objects/${pin.id}`, { a: 1 }, { 'if-match': '*, "zz"' }), 400, 'INVALID_ARGUMENT'],
      ['PATCH If-Match *,*', json('PATCH', `/v1/objects/${pin.id}`, { a: 1 }, { 'if-match': '*,*' }), 400, 'INVALID_ARGUMENT'],
      ['PATCH two If-Match headers, a tag and *', { ...json('PATCH', `/v1/objects/${pin.id}`, { a: 1 }), headers: { 'content-type': 'application/json', 'if-match': ['"zz"', '*'] } }, 400, 'INVALID_ARGUMENT'],
      ['DELETE If-Match of a tag and *', { method: 'DELETE', url: `/v1/objects/${pin.id}`, headers: { 'if-match': '"zz", *' } }, 400, 'INVALID_ARGUMENT'],
      ['DELETE hard If-Match of * and a tag', { method: 'DELETE', url: `/v1/objects/${pin.id}?hard=true`, headers: { 'if-match': '*, "zz"' } }, 400, 'INVALID_ARGUMENT'],
      ['GET If-None-Match of a tag and *', { method: 'GET', url: `/v1/objects/${pin.id}`, headers: { 'if-none-match': '"zz", *' } }, 400, 'INVALID_ARGUMENT'],
      // If-None-Match on writes: validated (400), and a match is 412 with nothing changed.
      ['DELETE garbage If-None-Match', { method: 'DELETE', url: `/v1/objects/${pin.id}`, headers: { 'if-none-match': 'garbage' } }, 400, 'INVALID_ARGUMENT'],
      ['DELETE hard garbage If-None-Match', { method: 'DELETE', url: `/v1/objects/${pin.id}?hard=true`, headers: { 'if-none-match': 'garbage' } }, 400, 'INVALID_ARGUMENT'],
      ['PATCH garbage If-None-Match', json('PATCH', `/v1/objects/${pin.id}`, { a: 1 }, { 'if-none-match': 'garbage' }), 400, 'INVALID_ARGUMENT'],
      ['PATCH If-None-Match of * and a tag', json('PATCH', `/v1/objects/${pin.id}`, { a: 1 }, { 'if-none-match': '*, "zz"' }), 400, 'INVALID_ARGUMENT'],
      ['DELETE If-None-Match *', { method: 'DELETE', url: `/v1/objects/${pin.id}`, headers: { 'if-none-match': '*' } }, 412, 'PRECONDITION_FAILED'],
      ['DELETE hard If-None-Match *', { method: 'DELETE', url: `/v1/objects/${pin.id}?hard=true`, headers: { 'if-none-match': '*' } }, 412, 'PRECONDITION_FAILED'],
      ['DELETE If-None-Match of the current tag', { method: 'DELETE', url: `/v1/objects/${pin.id}`, headers: { 'if-none-match': `"other", ${pin.etag}` } }, 412, 'PRECONDITION_FAILED'],
      ['DELETE hard If-None-Match of the current tag, weak', { method: 'DELETE', url: `/v1/objects/${pin.id}?hard=true`, headers: { 'if-none-match': `W/${pin.etag}` } }, 412, 'PRECONDITION_FAILED'],
      ['PATCH If-None-Match *', json('PATCH', `/v1/objects/${pin.id}`, { a: 1 }, { 'if-none-match': '*' }), 412, 'PRECONDITION_FAILED'],
      ['PATCH If-None-Match of the current tag', json('PATCH', `/v1/objects/${pin.id}`, { a: 1 }, { 'if-none-match': pin.etag }), 412, 'PRECONDITION_FAILED'],
      ['PATCH matching If-Match, matching If-None-Match', json('PATCH', `/v1/objects/${pin.id}`, { a: 1 }, { 'if-match': pin.etag, 'if-none-match': pin.etag }), 412, 'PRECONDITION_FAILED'],
      ['DELETE hard=maybe', { method: 'DELETE', url: `/v1/objects/${pin.id}?hard=maybe` }, 400, 'INVALID_ARGUMENT'],
      ['DELETE unknown param', { method: 'DELETE', url: `/v1/objects/${pin.id}?force=1` }, 400, 'INVALID_ARGUMENT'],
      // Mappings.
      ['PUT unknown mapping', json('PUT', `/v1/mappings/board_has_pinz/${board.id}/${pin.id}`, {}), 404, 'UNKNOWN_MAPPING'],
      ['PUT hostile mapping name', json('PUT', `/v1/mappings/${enc('x"; DROP TABLE board_has_pins; --')}/${board.id}/${pin.id}`, {}), 404, 'UNKNOWN_MAPPING'],
      ['PUT mapping from wrong type', json('PUT', `/v1/mappings/board_has_pins/${user.id}/${pin.id}`, {}), 400, 'INVALID_ARGUMENT'],
      ['PUT mapping to wrong type', json('PUT', `/v1/mappings/board_has_pins/${board.id}/${user.id}`, {}), 400, 'INVALID_ARGUMENT'],
      ['PUT mapping reversed', json('PUT', `/v1/mappings/board_has_pins/${pin.id}/${board.id}`, {}), 400, 'INVALID_ARGUMENT'],
      ['PUT sequence 1.5', json('PUT', `/v1/mappings/board_has_pins/${board.id}/${pin.id}`, { sequence: 1.5 }), 400, 'INVALID_ARGUMENT'],
      ['PUT sequence string', json('PUT', `/v1/mappings/board_has_pins/${board.id}/${pin.id}`, { sequence: 'soon' }), 400, 'INVALID_ARGUMENT'],
      ['PUT sequence 2^60', json('PUT', `/v1/mappings/board_has_pins/${board.id}/${pin.id}`, '{"sequence":1152921504606846976}'), 400, 'INVALID_ARGUMENT'],
      ['PUT sequence unknown field', json('PUT', `/v1/mappings/board_has_pins/${board.id}/${pin.id}`, { seq: 1 }), 400, 'INVALID_ARGUMENT'],
      ['PUT mapping not JSON', json('PUT', `/v1/mappings/board_has_pins/${board.id}/${pin.id}`, '{'), 400, 'INVALID_JSON'],
      ['PUT mapping oversize', json('PUT', `/v1/mappings/board_has_pins/${board.id}/${pin.id}`, { big }), 413, 'PAYLOAD_TOO_LARGE'],
      ['GET unknown mapping', { method: 'GET', url: `/v1/mappings/nope/${board.id}` }, 404, 'UNKNOWN_MAPPING'],
      ['GET mapping from wrong type', { method: 'GET', url: `/v1/mappings/board_has_pins/${pin.id}` }, 400, 'INVALID_ARGUMENT'],
      ['GET limit 0', { method: 'GET', url: `/v1/mappings/board_has_pins/${board.id}?limit=0` }, 400, 'INVALID_ARGUMENT'],
      ['GET limit 1001', { method: 'GET', url: `/v1/mappings/board_has_pins/${board.id}?limit=1001` }, 400, 'INVALID_ARGUMENT'],
      ['GET limit x', { method: 'GET', url: `/v1/mappings/board_has_pins/${board.id}?limit=x` }, 400, 'INVALID_ARGUMENT'],
      ['GET limit -5', { method: 'GET', url: `/v1/mappings/board_has_pins/${board.id}?limit=-5` }, 400, 'INVALID_ARGUMENT'],
      // The validator's coercion reads `+value`: each of these was a number to it.
      ['GET limit 1e1', { method: 'GET', url: `/v1/mappings/board_has_pins/${board.id}?limit=1e1` }, 400, 'INVALID_ARGUMENT'],
      ['GET limit 0x10', { method: 'GET', url: `/v1/mappings/board_has_pins/${board.id}?limit=0x10` }, 400, 'INVALID_ARGUMENT'],
      ['GET limit " 10"', { method: 'GET', url: `/v1/mappings/board_has_pins/${board.id}?limit=%2010` }, 400, 'INVALID_ARGUMENT'],
      ['GET limit +10', { method: 'GET', url: `/v1/mappings/board_has_pins/${board.id}?limit=%2B10` }, 400, 'INVALID_ARGUMENT'],
      ['GET join limit 0b11', { method: 'GET', url: `/v1/mappings/board_has_pins/${board.id}/objects?limit=0b11` }, 400, 'INVALID_ARGUMENT'],
      ['GET order sideways', { method: 'GET', url: `/v1/mappings/board_has_pins/${board.id}?order=sideways` }, 400, 'INVALID_ARGUMENT'],
      ['GET cursor garbage', { method: 'GET', url: `/v1/mappings/board_has_pins/${board.id}?cursor=garbage` }, 400, 'INVALID_ARGUMENT'],
      ['GET cursor too long', { method: 'GET', url: `/v1/mappings/board_has_pins/${board.id}?cursor=${'A'.repeat(100)}` }, 400, 'INVALID_ARGUMENT'],
      ['GET cursor of the other order', { method: 'GET', url: `/v1/mappings/board_has_pins/${board.id}?cursor=${ascCursor}` }, 400, 'INVALID_ARGUMENT'],
      ['GET cursor of another mapping', { method: 'GET', url: `/v1/mappings/board_has_pins/${board.id}?cursor=${foreignCursors[0]}` }, 400, 'INVALID_ARGUMENT'],
      ['GET cursor of another from ID', { method: 'GET', url: `/v1/mappings/board_has_pins/${board.id}?cursor=${foreignCursors[1]}` }, 400, 'INVALID_ARGUMENT'],
      ['GET join cursor of another list', { method: 'GET', url: `/v1/mappings/board_has_pins/${board.id}/objects?cursor=${foreignCursors[1]}` }, 400, 'INVALID_ARGUMENT'],
      ['GET join cursor garbage', { method: 'GET', url: `/v1/mappings/board_has_pins/${board.id}/objects?cursor=${enc("'; --")}` }, 400, 'INVALID_ARGUMENT'],
      ['GET join limit 0', { method: 'GET', url: `/v1/mappings/board_has_pins/${board.id}/objects?limit=0` }, 400, 'INVALID_ARGUMENT'],
      ['GET count unknown mapping', { method: 'GET', url: `/v1/mappings/nope/${board.id}/count` }, 404, 'UNKNOWN_MAPPING'],
      ['DELETE unknown mapping', { method: 'DELETE', url: `/v1/mappings/nope/${board.id}/${pin.id}` }, 404, 'UNKNOWN_MAPPING'],
      // Lookups.
      ['PUT unknown keyspace', json('PUT', '/v1/lookups/phone/k', { id: user.id }), 404, 'UNKNOWN_KEYSPACE'],
      ['PUT hostile keyspace', json('PUT', `/v1/lookups/${enc('../../etc')}/k`, { id: user.id }), 404, 'UNKNOWN_KEYSPACE'],
      ['PUT key over 1024 bytes', json('PUT', `/v1/lookups/email/${'k'.repeat(1025)}`, { id: user.id }), 400, 'INVALID_ARGUMENT'],
      ['PUT key of 513 two-byte chars', json('PUT', `/v1/lookups/email/${enc('é'.repeat(513))}`, { id: user.id }), 400, 'INVALID_ARGUMENT'],
      ['PUT key invalid UTF-8', json('PUT', '/v1/lookups/email/%ED%A0%80', { id: user.id }), 400, 'INVALID_ARGUMENT'],
      ['PUT lookup without id', json('PUT', '/v1/lookups/email/k', {}), 400, 'INVALID_ARGUMENT'],
      ['PUT lookup id as number', json('PUT', '/v1/lookups/email/k', `{"id":${user.id}}`), 400, 'INVALID_ID'],
      ['PUT lookup id null', json('PUT', '/v1/lookups/email/k', { id: null }), 400, 'INVALID_ID'],
      ['PUT lookup unknown field', json('PUT', '/v1/lookups/email/k', { id: user.id, ttl: 5 }), 400, 'INVALID_ARGUMENT'],
      ['PUT lookup not JSON', json('PUT', '/v1/lookups/email/k', 'id='), 400, 'INVALID_JSON'],
      ['PUT lookup oversize', json('PUT', '/v1/lookups/email/k', { id: user.id, big }), 413, 'PAYLOAD_TOO_LARGE'],
      ['GET unknown keyspace', { method: 'GET', url: '/v1/lookups/constructor/k' }, 404, 'UNKNOWN_KEYSPACE'],
      ['GET key over 1024 bytes', { method: 'GET', url: `/v1/lookups/email/${'k'.repeat(2000)}` }, 400, 'INVALID_ARGUMENT'],
      ['DELETE unknown keyspace', { method: 'DELETE', url: '/v1/lookups/phone/k' }, 404, 'UNKNOWN_KEYSPACE'],
      ['DELETE key over 1024 bytes', { method: 'DELETE', url: `/v1/lookups/email/${'k'.repeat(1025)}` }, 400, 'INVALID_ARGUMENT'],
      // Unknown routes and methods.
      ['unknown route', { method: 'GET', url: '/v1/pins/1' }, 404, 'NOT_FOUND'],
      // Defect 5: a method the path does not have is 405 (the Allow header: contract.test.ts).
      ['unknown method', json('PUT', `/v1/objects/${pin.id}`, { data: {} }), 405, 'METHOD_NOT_ALLOWED'],
      ['PATCH a mapping', json('PATCH', `/v1/mappings/board_has_pins/${board.id}/${pin.id}`, {}), 405, 'METHOD_NOT_ALLOWED'],
      ['POST a lookup', json('POST', '/v1/lookups/email/k', { id: user.id }), 405, 'METHOD_NOT_ALLOWED'],
      ['DELETE the topology', { method: 'DELETE', url: '/v1/topology' }, 405, 'METHOD_NOT_ALLOWED'],
      // Defect 1: every route refuses query parameters it does not know, and writes nothing.
      ['GET object unknown param', { method: 'GET', url: `/v1/objects/${pin.id}?bogus=1` }, 400, 'INVALID_ARGUMENT'],
      ['PATCH object unknown param', json('PATCH', `/v1/objects/${pin.id}?bogus=1`, { a: 1 }), 400, 'INVALID_ARGUMENT'],
      ['POST object unknown param', json('POST', '/v1/objects/pin?bogus=1', { data: {} }), 400, 'INVALID_ARGUMENT'],
      ['PUT lookup path form with ?key=', json('PUT', '/v1/lookups/email/a?key=b', { id: user.id }), 400, 'INVALID_ARGUMENT'],
      ['GET lookup path form unknown param', { method: 'GET', url: '/v1/lookups/email/a?x=1' }, 400, 'INVALID_ARGUMENT'],
      ['DELETE lookup path form unknown param', { method: 'DELETE', url: '/v1/lookups/email/a?x=1' }, 400, 'INVALID_ARGUMENT'],
      ['PUT lookup query form extra param', json('PUT', '/v1/lookups/email?key=a&x=1', { id: user.id }), 400, 'INVALID_ARGUMENT'],
      ['PUT mapping unknown param', json('PUT', `/v1/mappings/board_has_pins/${board.id}/${pin.id}?sequence=5`, {}), 400, 'INVALID_ARGUMENT'],
      ['DELETE mapping unknown param', { method: 'DELETE', url: `/v1/mappings/board_has_pins/${board.id}/${pin.id}?x=1` }, 400, 'INVALID_ARGUMENT'],
      ['GET count unknown param', { method: 'GET', url: `/v1/mappings/board_has_pins/${board.id}/count?limit=5` }, 400, 'INVALID_ARGUMENT'],
      ['GET mapping unknown param', { method: 'GET', url: `/v1/mappings/board_has_pins/${board.id}?offset=5` }, 400, 'INVALID_ARGUMENT'],
      ['GET topology unknown param', { method: 'GET', url: '/v1/topology?x=1' }, 400, 'INVALID_ARGUMENT'],
      ['GET schema unknown param', { method: 'GET', url: '/v1/schema?x=1' }, 400, 'INVALID_ARGUMENT'],
      // Defect 2: the percent-encoding check holds whatever the parameter's spelling.
      ['PUT lookup ?k%65y= invalid UTF-8', json('PUT', '/v1/lookups/email?k%65y=%ED%A0%80', { id: user.id }), 400, 'INVALID_ARGUMENT'],
      ['PUT lookup ?%6B%65%79= invalid UTF-8', json('PUT', '/v1/lookups/email?%6B%65%79=%ED%A0%80', { id: user.id }), 400, 'INVALID_ARGUMENT'],
      ['GET lookup ?k%65y= truncated escape', { method: 'GET', url: '/v1/lookups/email?k%65y=%E0%A4' }, 400, 'INVALID_ARGUMENT'],
      ['DELETE lookup ?key=a&key=%ZZ', { method: 'DELETE', url: '/v1/lookups/email?x=1&key=%ZZ' }, 400, 'INVALID_ARGUMENT'],
      ['GET mapping with a malformed name', { method: 'GET', url: `/v1/mappings/board_has_pins/${board.id}?%FF=1` }, 400, 'INVALID_ARGUMENT'],
    );

    assert.deepEqual(await failedCases(f.app, cases), []);
    // A multi-get names the position of the malformed ID, whatever is wrong with it (reserved bits included).
    for (const [id, status] of BAD_IDS) {
      if (status !== 400) continue;
      const res = await f.app.inject({ method: 'GET', url: `/v1/objects?ids=${pin.id},${enc(id)}` });
      assert.match((res.json() as { error: { message: string } }).error.message, /^ids\[1\]/, `ids=${id}`);
    }
    assert.equal(snapshot(f.root), before, 'bad input must not write anything');
    // And the good objects are untouched.
    const got = await f.app.inject({ method: 'GET', url: `/v1/objects/${pin.id}` });
    assert.deepEqual((got.json() as { data: unknown }).data, { name: 'p' });
  } finally {
    await f.cleanup();
  }
});

test('a body over the default 1 MiB limit is 413', async () => {
  const f = await makeApp();
  try {
    const res = await f.app.inject({ method: 'POST', url: '/v1/objects/pin', headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ data: { big: 'x'.repeat(1024 * 1024) } }) });
    assertError(res, 413, 'PAYLOAD_TOO_LARGE');
    const ok = await f.app.inject({ method: 'POST', url: '/v1/objects/pin', headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ data: { big: 'x'.repeat(1000 * 1000) } }) });
    assert.equal(ok.statusCode, 201);
  } finally {
    await f.cleanup();
  }
});

test('a path parameter of any length gets its route\'s own 400, with a short message', async () => {
  // Over 16384 characters, the router refused it first: 414 INVALID_ARGUMENT, the whole URL
  // (16 KB and more) echoed in the message. The request line's own limit is 64 KiB (431).
  const f = await makeApp();
  try {
    const board = await createObject(f.app, 'board', { name: 'b' });
    const before = snapshot(f.root);
    const cases: Array<[InjectOptions, number, string]> = [];
    for (const n of [16_385, 60_000]) {
      const digits = '9'.repeat(n);
      const word = 'k'.repeat(n);
      cases.push(
        [{ method: 'GET', url: `/v1/objects/${digits}` }, 400, 'INVALID_ID'],
        [{ method: 'DELETE', url: `/v1/objects/${digits}` }, 400, 'INVALID_ID'],
        [{ method: 'PATCH', url: `/v1/objects/${digits}`, payload: { a: 1 } }, 400, 'INVALID_ID'],
        [{ method: 'POST', url: `/v1/objects/${word}`, payload: { data: {} } }, 400, 'INVALID_ARGUMENT'],
        [{ method: 'GET', url: `/v1/mappings/board_has_pins/${digits}` }, 400, 'INVALID_ID'],
        [{ method: 'GET', url: `/v1/mappings/board_has_pins/${digits}/count` }, 400, 'INVALID_ID'],
        [{ method: 'PUT', url: `/v1/mappings/board_has_pins/${board.id}/${digits}`, payload: {} }, 400, 'INVALID_ID'],
        [{ method: 'DELETE', url: `/v1/mappings/board_has_pins/${board.id}/${digits}` }, 400, 'INVALID_ID'],
        [{ method: 'GET', url: `/v1/mappings/${word}/${board.id}` }, 400, 'INVALID_ARGUMENT'],
        [{ method: 'GET', url: `/v1/lookups/email/${word}` }, 400, 'INVALID_ARGUMENT'],
        [{ method: 'PUT', url: `/v1/lookups/email/${word}`, payload: { id: board.id } }, 400, 'INVALID_ARGUMENT'],
        [{ method: 'DELETE', url: `/v1/lookups/email/${word}` }, 400, 'INVALID_ARGUMENT'],
        [{ method: 'GET', url: `/v1/lookups/${word}/k` }, 400, 'INVALID_ARGUMENT'],
        [{ method: 'GET', url: `/v1/objects/%E0%A4%A${word}` }, 400, 'INVALID_ARGUMENT'],
      );
    }
    const failures: string[] = [];
    for (const [request, status, code] of cases) {
      const res = await f.app.inject(request);
      const what = `${request.method} ${String(request.url).slice(0, 40)}… (${String(request.url).length})`;
      try {
        assertError(res, status, code, what);
        const message = (res.json() as { error: { message: string } }).error.message;
        assert.ok(message.length <= 200, `${what}: a message of ${message.length} characters: ${message.slice(0, 120)}…`);
      } catch (err) {
        failures.push((err as Error).message.split('\n')[0]!);
      }
    }
    assert.deepEqual(failures, []);
    assert.equal(snapshot(f.root), before, 'nothing written');
  } finally {
    await f.cleanup();
  }
});
