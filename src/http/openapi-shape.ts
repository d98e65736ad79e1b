import { STATUS_CODES } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { ERROR_CODES } from '../errors.js';
import { errorBody } from './schemas.js';

/**
 * The OpenAPI document as client generators want it (#33): an `operationId` on every operation,
 * one `Error` component (with the enum of codes) referenced by every error answer instead of
 * 300 inline copies, and a status text where fastify-swagger writes "Default Response".
 */

/**
 * A stable operationId from the method and the path: `GET /v1/objects/:id` is
 * `getObjectsById`, `POST /v1/datasets/:ds/rows:batchGet` is `postDatasetsByDsRowsBatchGet`,
 * `POST /v1/objects/:type(re):batchCreate` is `postObjectsByTypeBatchCreate`.
 * Derived, so a new route cannot forget it; a route may still name its own in its schema.
 */
export function operationIdFor(method: string, url: string): string {
  const words = url.split('/').filter((s) => s !== '' && s !== 'v1').flatMap((segment) => {
    if (segment.startsWith(':')) {
      // `:type(^regex$):batchCreate`: the parameter, then the action after it.
      const [name = '', ...actions] = segment.slice(1).replace(/\([^)]*\)/g, '').split(':');
      return ['By', capital(name), ...actions.map(capital)];
    }
    if (segment === '*') return ['Any'];
    return segment.split(/[^A-Za-z0-9]+/).filter((w) => w !== '').map(capital);
  });
  return `${method.toLowerCase()}${words.join('')}`;
}

function capital(word: string): string {
  return word.charAt(0).toUpperCase() + word.slice(1);
}

export function installOperationIds(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    const schema = route.schema as ({ hide?: boolean; operationId?: string } & Record<string, unknown>) | undefined;
    if (schema === undefined || schema.hide === true || schema.operationId !== undefined) return;
    const methods = [route.method].flat();
    route.schema = { ...schema, operationId: operationIdFor(methods.length === 1 ? String(methods[0]) : methods.join(''), route.url) };
  });
}

const ERROR_REF = { $ref: '#/components/schemas/Error' };
const INLINE_ERROR = JSON.stringify(errorBody);

/** The error body with the codes of src/errors.ts as an enum. */
export const errorComponent = {
  ...errorBody,
  description: 'Every error answer: a stable code (docs/errors.md) and a readable message.',
  properties: {
    error: {
      ...errorBody.properties.error,
      properties: { code: { type: 'string', enum: Object.keys(ERROR_CODES) }, message: { type: 'string' } },
    },
  },
};

interface Operation {
  parameters?: Array<{ in?: string; name?: string; description?: string }>;
  responses?: Record<string, { description?: string; headers?: Record<string, unknown>; content?: Record<string, { schema?: unknown }> }>;
}

/** components.headers: each documented once, referenced by every answer that carries it. */
const HEADER_COMPONENTS = {
  // Every answer (request-ids.ts).
  RequestId: { description: 'The request\'s id: the X-Request-Id it sent when sane (1-128 of A-Za-z0-9._:@/+=-), else a UUID; the reqId of its log lines', schema: { type: 'string' } },
  // The retryable refusals (limits.ts, the SHARD_MOVING answer).
  RetryAfter: { description: 'Seconds to wait before retrying', schema: { type: 'integer' } },
  // 405 METHOD_NOT_ALLOWED (contract-hooks.ts).
  Allow: { description: 'The methods the path has', schema: { type: 'string' } },
};
const ANSWER_HEADERS = { 'X-Request-Id': { $ref: '#/components/headers/RequestId' } };
const RETRY_HEADERS = { 'Retry-After': { $ref: '#/components/headers/RetryAfter' } };
const ALLOW_HEADERS = { Allow: { $ref: '#/components/headers/Allow' } };

/**
 * A wildcard route (`/v1/datasets/:ds/rows/*`: row keys may hold slashes) as fastify-swagger
 * writes it, `{*}`, is a parameter no generator can name (#33); it becomes `{row}`.
 */
function nameWildcards(paths: Record<string, Record<string, Operation>>): Record<string, Record<string, Operation>> {
  const out: Record<string, Record<string, Operation>> = {};
  for (const [path, operations] of Object.entries(paths)) {
    if (!path.endsWith('/rows/{*}')) {
      out[path] = operations;
      continue;
    }
    for (const operation of Object.values(operations)) {
      for (const p of operation.parameters ?? []) {
        if (p.in === 'path' && p.name === '*') Object.assign(p, { name: 'row', description: 'The row key, URL-encoded (it may hold slashes)' });
      }
    }
    out[path.replace(/\{\*\}$/, '{row}')] = operations;
  }
  return out;
}

/** swagger's transformObject: the Error component, the answer headers, status texts for "Default Response", named wildcards. */
export function shapeDocument<T extends { paths?: Record<string, Record<string, Operation>>; components?: Record<string, unknown> }>(doc: T): T {
  if (doc.paths !== undefined) doc.paths = nameWildcards(doc.paths);
  for (const operations of Object.values(doc.paths ?? {})) {
    for (const operation of Object.values(operations)) {
      for (const [status, response] of Object.entries(operation.responses ?? {})) {
        if (response.description === 'Default Response') response.description = STATUS_CODES[Number(status)] ?? 'Response';
        response.headers = { ...response.headers, ...ANSWER_HEADERS, ...(status === '429' || status === '503' ? RETRY_HEADERS : {}), ...(status === '405' ? ALLOW_HEADERS : {}) };
        for (const media of Object.values(response.content ?? {})) {
          if (JSON.stringify(media.schema) === INLINE_ERROR) media.schema = ERROR_REF;
        }
      }
    }
  }
  const components = (doc.components ?? {}) as { schemas?: Record<string, unknown>; headers?: Record<string, unknown> };
  doc.components = { ...components, schemas: { ...components.schemas, Error: errorComponent }, headers: { ...components.headers, ...HEADER_COMPONENTS } };
  return doc;
}
