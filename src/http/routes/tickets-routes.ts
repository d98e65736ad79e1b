import type { FastifyInstance } from 'fastify';
import type {} from '@fastify/swagger';
import { formatId } from '../../ids/codec.js';
import type { TicketClient } from '../../tickets/ticket-client.js';

const errorBody = {
  type: 'object',
  properties: { error: { type: 'object', properties: { code: { type: 'string' }, message: { type: 'string' } }, required: ['code', 'message'] } },
  required: ['error'],
} as const;

/**
 * `POST /v1/tickets/{sequence}?count=n` → `{"ids":["…"]}` and `GET /v1/tickets` (sequences,
 * mode, server health). A fastify plugin for `buildApp({ plugins })`; the client stays owned by
 * the caller (closed with the service).
 */
export function ticketsRoutes(client: TicketClient): (app: FastifyInstance) => Promise<void> {
  const maxBatch = client.config.maxBatch;
  return async (app: FastifyInstance) => {
    app.post<{ Params: { sequence: string }; Querystring: { count?: number } }>('/v1/tickets/:sequence', {
      schema: {
        tags: ['tickets'],
        summary: 'Issue new unique IDs from a named sequence (Flickr ticket servers)',
        description: `Classic mode: one REPLACE on a ticket server per ID, servers in round robin. Segment mode: from a block reserved in memory. IDs are decimal strings (64-bit). count: 1..${maxBatch}, default 1.`,
        params: { type: 'object', properties: { sequence: { type: 'string', maxLength: 200 } }, required: ['sequence'] },
        querystring: { type: 'object', properties: { count: { type: 'integer', minimum: 1, maximum: maxBatch, default: 1 } } },
        response: {
          200: { type: 'object', properties: { ids: { type: 'array', items: { type: 'string' } } }, required: ['ids'], additionalProperties: false },
          400: errorBody,
          404: errorBody,
          503: errorBody,
        },
      },
    }, async (request) => {
      const { sequence } = request.params;
      const count = request.query.count ?? 1;
      const ids = count === 1 ? [await client.next(sequence)] : await client.nextBatch(sequence, count);
      return { ids: ids.map(formatId) };
    });

    app.get('/v1/tickets', {
      schema: {
        tags: ['tickets'],
        summary: 'Named sequences, the client mode and the health of each ticket server as this service sees it',
        response: {
          200: {
            type: 'object',
            properties: {
              mode: { type: 'string' },
              sequences: { type: 'array', items: { type: 'string' } },
              servers: {
                type: 'array',
                items: { type: 'object', properties: { name: { type: 'string' }, up: { type: 'boolean' }, lastError: { type: 'string' } }, required: ['name', 'up'] },
              },
            },
            required: ['mode', 'sequences', 'servers'],
          },
        },
      },
    }, async () => ({ mode: client.mode, sequences: client.sequences(), servers: client.serverStatus() }));
  };
}
