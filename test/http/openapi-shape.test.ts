/**
 * Issue #33, the OpenAPI document a client generator loves: every operation has a unique
 * operationId (0 of 35 had one), error answers reference one `Error` component whose code is the
 * enum of src/errors.ts (it was inline 300+ times, a plain string), every /v1/ operation
 * documents 500, no response is described as "Default Response", answers document X-Request-Id
 * (and Retry-After on 429/503), and PATCH takes application/merge-patch+json.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { ERROR_CODES } from '../../src/errors.js';
import { operationIdFor } from '../../src/http/openapi-shape.js';

interface Doc {
  paths: Record<string, Record<string, { operationId?: string; responses: Record<string, { description: string; headers?: Record<string, unknown>; content?: Record<string, { schema: unknown }> }> }>>;
  components: { schemas?: Record<string, { properties: { error: { properties: { code: { enum?: string[] } } } } }> };
}

const doc = JSON.parse(readFileSync(new URL('../../docs/openapi.json', import.meta.url), 'utf8')) as Doc;

test('docs/openapi.json: a unique operationId on every operation', () => {
  const ids = new Map<string, string>();
  for (const [path, operations] of Object.entries(doc.paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      const where = `${method.toUpperCase()} ${path}`;
      assert.match(String(operation.operationId), /^[a-z]+[A-Za-z0-9]*$/, where);
      assert.ok(!ids.has(operation.operationId!), `${where} repeats the operationId of ${ids.get(operation.operationId!)}`);
      ids.set(operation.operationId!, where);
    }
  }
  assert.ok(ids.size >= 36, `${ids.size} operations`);
  assert.equal(operationIdFor('GET', '/v1/objects/:id'), 'getObjectsById');
  assert.equal(operationIdFor('POST', '/v1/objects/:type(^[a-z]+$):batchCreate'), 'postObjectsByTypeBatchCreate');
  assert.equal(operationIdFor('POST', '/v1/datasets/:ds/rows:batchGet'), 'postDatasetsByDsRowsBatchGet');
});

test('docs/openapi.json: every error answer is the shared Error component, whose code is the enum of error codes', () => {
  assert.deepEqual(doc.components.schemas?.Error?.properties.error.properties.code.enum, Object.keys(ERROR_CODES));
  let refs = 0;
  for (const [path, operations] of Object.entries(doc.paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      const where = `${method.toUpperCase()} ${path}`;
      if (path.startsWith('/v1/')) assert.ok(operation.responses['500'] !== undefined, `${where} documents 500`);
      for (const [status, response] of Object.entries(operation.responses)) {
        assert.notEqual(response.description, 'Default Response', `${where} ${status}`);
        assert.ok(response.headers?.['X-Request-Id'] !== undefined, `${where} ${status} documents X-Request-Id`);
        if (status === '429' || status === '503') assert.ok(response.headers?.['Retry-After'] !== undefined, `${where} ${status} documents Retry-After`);
        if (Number(status) < 400) continue;
        for (const media of Object.values(response.content ?? {})) {
          assert.deepEqual(media.schema, { $ref: '#/components/schemas/Error' }, `${where} ${status}`);
          refs++;
        }
      }
    }
  }
  assert.ok(refs > 300, `${refs} error answers`);
  const patch = doc.paths['/v1/objects/{id}']!.patch as unknown as { requestBody: { content: Record<string, unknown> } };
  assert.deepEqual(Object.keys(patch.requestBody.content).sort(), ['application/json', 'application/merge-patch+json']);
  assert.doesNotMatch(JSON.stringify(doc.paths), /"message":\{"type":"string"\}/, 'no inline copy of the error body left');
});
