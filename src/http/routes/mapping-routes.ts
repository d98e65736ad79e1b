import type { FastifyInstance } from 'fastify';
import { ShardKitError } from '../../errors.js';
import { formatId } from '../../ids/codec.js';
import type { ShardKit } from '../../kit/shard-kit.js';
import type { ListOrder } from '../../kit/types.js';
import { errorResponses, idString, listQuery, nameParam, objectBody } from '../schemas.js';
import { objectsJson } from '../limits.js';

interface PairParams {
  name: string;
  from: string;
  to: string;
}

interface ListQuery {
  limit?: number;
  order?: ListOrder;
  cursor?: string;
}

const fromParams = { type: 'object', properties: { name: nameParam, from: idString }, required: ['name', 'from'] } as const;
const pairParams = { type: 'object', properties: { name: nameParam, from: idString, to: idString }, required: ['name', 'from', 'to'] } as const;
const addBody = {
  type: 'object',
  properties: { sequence: { type: 'integer', minimum: Number.MIN_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER } },
  additionalProperties: false,
} as const;
const nextField = { type: ['string', 'null'], description: 'Cursor of the next page; null on the last page' } as const;

/** Mappings: add (upsert), remove, keyset-paged lists, the application-level join, count. */
export function mappingRoutes(kit: ShardKit) {
  return async (app: FastifyInstance): Promise<void> => {
    app.put<{ Params: PairParams; Body: { sequence?: number } | undefined }>('/v1/mappings/:name/:from/:to', {
      schema: {
        tags: ['mappings'],
        summary: 'Add a mapping from → to (or move it to a new sequence)',
        description: 'Stored on the shard of `from`. The body is optional (none, or an empty one with any JSON content type). The default sequence is the time of the call in unix ms; adding an existing pair updates its sequence.',
        params: pairParams,
        body: addBody,
        response: { 204: { type: 'null', description: 'Stored' }, ...errorResponses },
      },
      // The body is optional: a bare PUT adds the pair at the current time, empty JSON included
      // (app.ts reads this flag). A sequence of another JSON type ("5", true, null) is refused
      // rather than coerced by Ajv into a number.
      config: { optionalBody: true },
      preValidation: [
        async (request) => {
          if (request.body === undefined) request.body = {};
        },
      ],
    }, async (request, reply) => {
      const { name, from, to } = request.params;
      const sequence = request.body?.sequence;
      await kit.mappings.add(name, from, to, sequence !== undefined ? { sequence } : {});
      return reply.code(204).send();
    });

    app.delete<{ Params: PairParams }>('/v1/mappings/:name/:from/:to', {
      schema: {
        tags: ['mappings'],
        summary: 'Remove a mapping',
        description: '404 NOT_FOUND when the pair was not there (the rule of every DELETE).',
        params: pairParams,
        response: { 204: { type: 'null', description: 'Removed' }, ...errorResponses },
      },
    }, async (request, reply) => {
      const { name, from, to } = request.params;
      if (!(await kit.mappings.remove(name, from, to))) throw new ShardKitError('NOT_FOUND', `${name} has no mapping ${from} -> ${to}`);
      return reply.code(204).send();
    });

    app.get<{ Params: { name: string; from: string }; Querystring: ListQuery }>('/v1/mappings/:name/:from', {
      schema: {
        tags: ['mappings'],
        summary: 'List a mapping, ordered by (sequence, id)',
        description: 'Keyset paging: pass `next` back as `cursor`. Every page is one index range scan, however deep.',
        params: fromParams,
        querystring: listQuery,
        response: {
          200: {
            type: 'object',
            properties: {
              items: { type: 'array', items: { type: 'object', properties: { id: idString, sequence: { type: 'integer' } }, required: ['id', 'sequence'] } },
              next: nextField,
            },
            required: ['items', 'next'],
          },
          ...errorResponses,
        },
      },
    }, async (request) => {
      const { name, from } = request.params;
      const page = await kit.mappings.list(name, from, request.query);
      return { items: page.items.map((i) => ({ id: formatId(i.id), sequence: i.sequence })), next: page.next };
    });

    app.get<{ Params: { name: string; from: string }; Querystring: ListQuery }>('/v1/mappings/:name/:from/objects', {
      schema: {
        tags: ['mappings'],
        summary: 'The application-level join: a page of the mapping, then its objects',
        description: 'Objects in mapping order; deleted ones are skipped, so a page may hold fewer than `limit`.',
        params: fromParams,
        querystring: listQuery,
        response: {
          200: { type: 'object', properties: { objects: { type: 'array', items: objectBody }, next: nextField }, required: ['objects', 'next'] },
          ...errorResponses,
        },
      },
    }, async (request, reply) => {
      const { name, from } = request.params;
      const page = await kit.join(name, from, request.query);
      return reply.type('application/json; charset=utf-8').send(`{"objects":${objectsJson(page.objects)},"next":${JSON.stringify(page.next)}}`);
    });

    app.get<{ Params: { name: string; from: string } }>('/v1/mappings/:name/:from/count', {
      schema: {
        tags: ['mappings'],
        summary: 'Number of items in a mapping list',
        params: fromParams,
        response: { 200: { type: 'object', properties: { count: { type: 'integer' } }, required: ['count'] }, ...errorResponses },
      },
    }, async (request) => {
      const { name, from } = request.params;
      return { count: await kit.mappings.count(name, from) };
    });
  };
}
