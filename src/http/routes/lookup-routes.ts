import type { FastifyInstance } from 'fastify';
import { ShardKitError } from '../../errors.js';
import { formatId } from '../../ids/codec.js';
import type { ShardKit } from '../../store/shard-kit.js';
import { errorResponses, idInBody, idString, nameParam } from '../schemas.js';

const params = {
  type: 'object',
  properties: {
    keyspace: nameParam,
    key: { type: 'string', description: 'The key, percent-encoded in the path (1..1024 UTF-8 bytes, compared byte for byte)' },
  },
  required: ['keyspace', 'key'],
} as const;

// `id` has no JSON type in the schema (schemas.ts): the handler refuses a non-string as INVALID_ID.
const putBody = { type: 'object', properties: { id: idInBody }, required: ['id'], additionalProperties: false } as const;

/** Lookups on the mod-shard fleet: key → object ID. */
export function lookupRoutes(kit: ShardKit) {
  return async (app: FastifyInstance): Promise<void> => {
    app.put<{ Params: { keyspace: string; key: string }; Body: { id: unknown } }>('/v1/lookups/:keyspace/:key', {
      schema: {
        tags: ['lookups'],
        summary: 'Map a key (email, username, ip, ...) to an object ID',
        description: 'Stored on mod shard md5(key) mod N. Replaces an existing mapping of the key.',
        params,
        body: putBody,
        response: { 204: { type: 'null', description: 'Stored' }, ...errorResponses },
      },
    }, async (request, reply) => {
      const { id } = request.body;
      if (typeof id !== 'string') throw new ShardKitError('INVALID_ID', 'id must be an ID as a decimal string');
      await kit.lookups.put(request.params.keyspace, request.params.key, id);
      return reply.code(204).send();
    });

    app.get<{ Params: { keyspace: string; key: string } }>('/v1/lookups/:keyspace/:key', {
      schema: {
        tags: ['lookups'],
        summary: 'The object ID of a key',
        params,
        response: { 200: { type: 'object', properties: { key: { type: 'string' }, id: idString }, required: ['key', 'id'] }, ...errorResponses },
      },
    }, async (request) => {
      const { keyspace, key } = request.params;
      const id = await kit.lookups.get(keyspace, key);
      if (id === undefined) throw new ShardKitError('NOT_FOUND', `no ${keyspace} lookup for this key`);
      return { key, id: formatId(id) };
    });

    app.delete<{ Params: { keyspace: string; key: string } }>('/v1/lookups/:keyspace/:key', {
      schema: {
        tags: ['lookups'],
        summary: 'Remove a key (204 whether or not it existed)',
        params,
        response: { 204: { type: 'null', description: 'Removed' }, ...errorResponses },
      },
    }, async (request, reply) => {
      await kit.lookups.delete(request.params.keyspace, request.params.key);
      return reply.code(204).send();
    });
  };
}
