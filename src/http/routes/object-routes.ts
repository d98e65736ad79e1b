import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { ShardKitError } from '../../errors.js';
import type { ShardKit } from '../../kit/shard-kit.js';
import type { KitObject } from '../../kit/kit-object.js';
import type { JsonObject } from '../../kit/types.js';
import { MAX_CREATE_MANY } from '../../kit/index.js';
import { objectsJson } from '../limits.js';
import { pinterestId } from '../../ids/pinterest-id.js';
import { formatEtag, ifMatchTags, ifNoneMatchHits, ifNoneMatchTags } from '../entity-tags.js';
import { errorResponses, idInBody, idString, nameParam, objectBody } from '../schemas.js';

/** Most IDs one GET /v1/objects?ids= may ask for. */
export const MAX_MULTI_GET = 1000;

const JSON_TYPE = 'application/json; charset=utf-8';

const createBody = {
  type: 'object',
  properties: {
    data: { type: 'object', additionalProperties: true, description: 'The object\'s fields (a JSON object; `active` is reserved)' },
    near: idInBody,
    shard: { type: 'integer', minimum: 0, maximum: 65535 },
  },
  required: ['data'],
  additionalProperties: false,
} as const;

const batchCreateBody = {
  type: 'object',
  properties: { items: { type: 'array', minItems: 1, maxItems: MAX_CREATE_MANY, items: createBody } },
  required: ['items'],
  additionalProperties: false,
} as const;

const conditionalHeaders = { type: 'object', properties: { 'if-match': { type: 'string' }, 'if-none-match': { type: 'string' } } } as const;

/** A JSON merge patch: any JSON values (null removes a field), so only its shape is checked. */
const patchBody = { type: 'object', additionalProperties: true } as const;

/**
 * Objects: create, get, multi-get, merge-patch and delete with If-Match / If-None-Match. Bodies
 * with a value of the wrong JSON type are refused, not coerced (bodyStrictValidator, app.ts).
 */
export function objectRoutes(kit: ShardKit) {
  return async (app: FastifyInstance): Promise<void> => {
    app.post<{ Params: { type: string }; Body: { data: JsonObject; near?: unknown; shard?: number } }>('/v1/objects/:type', {
      schema: {
        tags: ['objects'],
        summary: 'Create an object',
        description: 'Placed on the shard of `near` when given (a pin on its board\'s shard), else on `shard`, else on a uniformly chosen open shard. The ID encodes shard, type and local id.',
        params: { type: 'object', properties: { type: nameParam }, required: ['type'] },
        body: createBody,
        response: { 201: objectBody, ...errorResponses },
      },
    }, async (request, reply) => {
      const { data, near, shard } = request.body;
      if (near !== undefined && typeof near !== 'string') throw new ShardKitError('INVALID_ID', 'near must be an ID as a decimal string');
      const obj = await kit.objects.create(request.params.type, data, {
        ...(near !== undefined ? { near } : {}),
        ...(shard !== undefined ? { shard } : {}),
      });
      return sendObject(reply.code(201).header('location', `/v1/objects/${obj.id}`), obj);
    });

    // The regex keeps `pin:batchCreate` from matching the create route's `:type` above.
    app.post<{ Params: { type: string }; Body: { items: Array<{ data: JsonObject; near?: unknown; shard?: number }> } }>('/v1/objects/:type(^[A-Za-z0-9_]+)::batchCreate', {
      schema: {
        tags: ['objects'],
        summary: 'Create many objects of one type',
        description: `1..${MAX_CREATE_MANY} items, each placed as by create. The objects of one shard are written in one transaction, the shards in parallel, so filling a fleet costs one commit per shard and request. Every item is checked before anything is written (a bad one: 400 naming it, nothing written). If a shard fails, none of its objects is written and the error says how many other shards wrote. Objects come back in request order.`,
        params: { type: 'object', properties: { type: nameParam }, required: ['type'] },
        body: batchCreateBody,
        response: { 201: { type: 'object', properties: { objects: { type: 'array', items: objectBody } }, required: ['objects'] }, ...errorResponses },
      },
    }, async (request, reply) => {
      const items = request.body.items.map((item, i) => {
        if (item.near !== undefined && typeof item.near !== 'string') throw new ShardKitError('INVALID_ID', `items[${i}].near must be an ID as a decimal string`);
        return { data: item.data, ...(item.near !== undefined ? { near: item.near } : {}), ...(item.shard !== undefined ? { shard: item.shard } : {}) };
      });
      const objects = await kit.objects.createMany(request.params.type, items);
      return reply.code(201).type(JSON_TYPE).send(`{"objects":[${objects.map((o) => o.toWireJson()).join(',')}]}`);
    });

    app.get<{ Params: { id: string } }>('/v1/objects/:id', {
      schema: {
        tags: ['objects'],
        summary: 'Get an object',
        description: '404 NOT_FOUND when it does not exist or was deleted. Answers 304 to a matching If-None-Match (weak comparison: W/"x" matches "x"); a malformed If-None-Match is 400.',
        params: { type: 'object', properties: { id: idString }, required: ['id'] },
        response: { 200: objectBody, 304: { type: 'null', description: 'Not modified' }, ...errorResponses },
      },
    }, async (request, reply) => {
      const obj = await kit.objects.get(request.params.id);
      if (ifNoneMatchHits(request.headers['if-none-match'], obj.etag)) {
        return reply.code(304).header('etag', formatEtag(obj.etag)).send();
      }
      return sendObject(reply, obj);
    });

    app.get<{ Querystring: { ids: string } }>('/v1/objects', {
      schema: {
        tags: ['objects'],
        summary: 'Get many objects',
        description: `Comma-separated IDs (at most ${MAX_MULTI_GET}); one query per shard, shards in parallel. Objects come back in request order; missing or deleted ones are left out, as are well-formed IDs that name no known type or shard. A malformed ID is 400 INVALID_ID naming it.`,
        querystring: { type: 'object', properties: { ids: { type: 'string', maxLength: MAX_MULTI_GET * 21 } }, required: ['ids'], additionalProperties: false },
        response: { 200: { type: 'object', properties: { objects: { type: 'array', items: objectBody } }, required: ['objects'] }, ...errorResponses },
      },
    }, async (request, reply) => {
      const ids = request.query.ids.split(',');
      if (ids.length > MAX_MULTI_GET) throw new ShardKitError('INVALID_ARGUMENT', `at most ${MAX_MULTI_GET} ids per request`);
      // Malformed IDs are the client's mistake and named; a well-formed ID of an unknown type or
      // shard names nothing, like a missing object, and is left out.
      ids.forEach((id, i) => pinterestId.decode(id, `ids[${i}]`));
      // A repeated ID is answered each time (request order), but the answer stops at
      // MAX_ANSWER_BYTES (objectsJson).
      const objects = await kit.objects.getMany(ids, { skipInvalid: true });
      return reply.type(JSON_TYPE).send(`{"objects":${objectsJson(objects)}}`);
    });

    app.patch<{ Params: { id: string }; Body: JsonObject }>('/v1/objects/:id', {
      schema: {
        tags: ['objects'],
        summary: 'Update an object with a JSON merge patch (RFC 7396)',
        consumes: ['application/merge-patch+json', 'application/json'],
        description: 'Content-Type application/merge-patch+json or application/json. `null` removes a field. With If-Match, the patch applies only if the object still has that ETag (strong comparison; else 412 PRECONDITION_FAILED). With If-None-Match, only if it does not (weak comparison; `*`: never, the object exists; else 412). A malformed If-Match or If-None-Match is 400. Read, check and write happen in one transaction.',
        params: { type: 'object', properties: { id: idString }, required: ['id'] },
        headers: conditionalHeaders,
        body: patchBody,
        response: { 200: objectBody, ...errorResponses },
      },
    }, async (request, reply) => {
      const obj = await kit.objects.patch(request.params.id, request.body, conditions(request.headers));
      return sendObject(reply, obj);
    });

    app.delete<{ Params: { id: string }; Querystring: { hard?: boolean } }>('/v1/objects/:id', {
      schema: {
        tags: ['objects'],
        summary: 'Delete an object',
        description: 'Soft by default (`"active": false` in its JSON; reads then answer 404); `?hard=true` removes the row. 404 NOT_FOUND when nothing was there (the rule of every DELETE). With If-Match, deletes only if the object still has that ETag; with If-None-Match, only if it does not (`*`: never a current object); else 412, nothing deleted. A malformed If-Match or If-None-Match is 400.',
        params: { type: 'object', properties: { id: idString }, required: ['id'] },
        headers: conditionalHeaders,
        querystring: { type: 'object', properties: { hard: { type: 'boolean', default: false } }, additionalProperties: false },
        response: { 204: { type: 'null', description: 'Deleted' }, ...errorResponses },
      },
    }, async (request, reply) => {
      await kit.objects.delete(request.params.id, { hard: request.query.hard === true, ...conditions(request.headers) });
      return reply.code(204).send();
    });
  };
}

/**
 * The preconditions of a write (RFC 9110 §13.1.1-2), both parsed before anything is touched so
 * a malformed one is 400 with nothing changed; the kit checks them under the row lock.
 */
function conditions(headers: IncomingHttpHeaders): { ifMatch?: string[]; ifNoneMatch?: string[] } {
  const ifMatch = ifMatchTags(headers['if-match']);
  const ifNoneMatch = ifNoneMatchTags(headers['if-none-match']);
  return { ...(ifMatch !== undefined ? { ifMatch } : {}), ...(ifNoneMatch !== undefined ? { ifNoneMatch } : {}) };
}

/** Sends the stored JSON as is (no parse/serialize round trip), with its ETag. */
function sendObject(reply: import('fastify').FastifyReply, obj: KitObject) {
  return reply.header('etag', formatEtag(obj.etag)).type(JSON_TYPE).send(obj.toWireJson());
}
