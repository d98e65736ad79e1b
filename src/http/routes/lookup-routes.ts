import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ShardKitError } from '../../errors.js';
import { formatId } from '../../ids/codec.js';
import type { ShardKit } from '../../kit/shard-kit.js';
import { errorResponses, idInBody, idString, nameParam } from '../schemas.js';

const KEY_RULE = '1..1024 UTF-8 bytes, compared byte for byte';

/** `/v1/lookups/{keyspace}/{key}`: the key percent-encoded in the path. */
const inPath = {
  params: {
    type: 'object',
    properties: { keyspace: nameParam, key: { type: 'string', description: `The key, percent-encoded in the path (${KEY_RULE})` } },
    required: ['keyspace', 'key'],
  },
} as const;

/**
 * `/v1/lookups/{keyspace}?key=…`: the same routes with the key in the query string, for keys no
 * URL path can carry: "." and "..", which URL parsers (browsers, fetch) remove as dot segments
 * even percent-encoded.
 */
const inQuery = {
  params: { type: 'object', properties: { keyspace: nameParam }, required: ['keyspace'] },
  querystring: {
    type: 'object',
    properties: { key: { type: 'string', description: `The key, percent-encoded (${KEY_RULE}); the form for "." and ".." (the path form cannot carry them)` } },
    required: ['key'],
    additionalProperties: false,
  },
} as const;

type LookupRequest = FastifyRequest<{ Params: { keyspace: string; key?: string }; Querystring: { key?: string } }>;

/**
 * The key of either form. Percent-encoding of the whole query string, names included, is checked
 * once for every route before routing (app.ts), so `?k%65y=%ED%A0%80` is refused like `?key=`.
 */
function keyOf(request: LookupRequest): string {
  return request.params.key ?? request.query.key!;
}

// `id` has no JSON type in the schema (schemas.ts): the handler refuses a non-string as INVALID_ID.
const putBody = { type: 'object', properties: { id: idInBody }, required: ['id'], additionalProperties: false } as const;

/** Lookups on the mod-shard fleet: key → object ID, with the key in the path or in `?key=`. */
export function lookupRoutes(kit: ShardKit) {
  return async (app: FastifyInstance): Promise<void> => {
    for (const [url, where] of [['/v1/lookups/:keyspace/:key', inPath], ['/v1/lookups/:keyspace', inQuery]] as const) {
      app.put<{ Params: { keyspace: string; key?: string }; Querystring: { key?: string }; Body: { id: unknown } }>(url, {
        schema: {
          tags: ['lookups'],
          summary: 'Map a key (email, username, ip, ...) to an object ID',
          description: 'Stored on mod shard md5(key) mod N. Replaces an existing mapping of the key.',
          ...where,
          body: putBody,
          response: { 204: { type: 'null', description: 'Stored' }, ...errorResponses },
        },
      }, async (request, reply) => {
        const { id } = request.body;
        const key = keyOf(request);
        if (typeof id !== 'string') throw new ShardKitError('INVALID_ID', 'id must be an ID as a decimal string');
        await kit.lookups.put(request.params.keyspace, key, id);
        return reply.code(204).send();
      });

      app.get<{ Params: { keyspace: string; key?: string }; Querystring: { key?: string } }>(url, {
        schema: {
          tags: ['lookups'],
          summary: 'The object ID of a key',
          ...where,
          response: { 200: { type: 'object', properties: { key: { type: 'string' }, id: idString }, required: ['key', 'id'] }, ...errorResponses },
        },
      }, async (request) => {
        const { keyspace } = request.params;
        const key = keyOf(request);
        const id = await kit.lookups.get(keyspace, key);
        if (id === undefined) throw new ShardKitError('NOT_FOUND', `no ${keyspace} lookup for this key`);
        return { key, id: formatId(id) };
      });

      app.delete<{ Params: { keyspace: string; key?: string }; Querystring: { key?: string } }>(url, {
        schema: {
          tags: ['lookups'],
          summary: 'Remove a key',
          description: '404 NOT_FOUND when the key was not there (the rule of every DELETE).',
          ...where,
          response: { 204: { type: 'null', description: 'Removed' }, ...errorResponses },
        },
      }, async (request, reply) => {
        const { keyspace } = request.params;
        if (!(await kit.lookups.delete(keyspace, keyOf(request)))) throw new ShardKitError('NOT_FOUND', `no ${keyspace} lookup for this key`);
        return reply.code(204).send();
      });
    }
  };
}
