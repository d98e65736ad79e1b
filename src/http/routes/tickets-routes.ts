import type { FastifyInstance } from 'fastify';
import type {} from '@fastify/swagger';
import { ShardKitError } from '../../errors.js';
import { formatId } from '../../ids/codec.js';
import type { TicketClient } from '../../tickets/ticket-client.js';
import { registerTicketMetrics } from '../module-metrics.js';
import { ticketsConfigSchema } from '../../tickets/tickets-config.js';

const errorBody = {
  type: 'object',
  properties: { error: { type: 'object', properties: { code: { type: 'string' }, message: { type: 'string' } }, required: ['code', 'message'] } },
  required: ['error'],
} as const;

/** `maxBatch` of a tickets section that does not set it: what a service without one documents. */
const DEFAULT_MAX_BATCH = ticketsConfigSchema.shape.maxBatch.parse(undefined);

function notConfigured(): ShardKitError {
  return new ShardKitError('TICKETS_NOT_CONFIGURED', 'this service has no ticket servers configured: add a "tickets" section (servers and sequences) to its config file and restart it (docs/tickets.md)');
}

/**
 * `POST /v1/tickets/{sequence}?count=n` → `{"ids":["…"]}` and `GET /v1/tickets` (sequences,
 * mode, server health). A fastify plugin for `buildApp({ plugins })`; the client stays owned by
 * the caller (closed with the service). Without a client (no `tickets` section in the config)
 * the same routes exist and answer 501 TICKETS_NOT_CONFIGURED, so a caller learns why rather
 * than getting a bare 404 "no route".
 */
export function ticketsRoutes(client?: TicketClient): (app: FastifyInstance) => Promise<void> {
  const maxBatch = client?.config.maxBatch ?? DEFAULT_MAX_BATCH;
  // Before validation: a count out of range must not hide that nothing would serve it anyway.
  const refuseWhenNotConfigured = async (): Promise<void> => {
    if (client === undefined) throw notConfigured();
  };
  return async (app: FastifyInstance) => {
    if (client !== undefined && app.metricsRegistry !== null && app.metricsRegistry !== undefined) registerTicketMetrics(app.metricsRegistry, client);
    app.post<{ Params: { sequence: string }; Querystring: { count?: number } }>('/v1/tickets/:sequence', {
      preValidation: [
        async (request) => {
          if (request.body === undefined) request.body = {};
        },
        refuseWhenNotConfigured,
      ],
      // The options are in the query: the body is empty or `{}` (app.ts reads this flag).
      config: { optionalBody: true },
      schema: {
        tags: ['tickets'],
        summary: 'Issue new unique IDs from a named sequence (Flickr ticket servers)',
        body: { type: 'object', properties: {}, additionalProperties: false },
        description: `Classic mode: one REPLACE on a ticket server per ID, servers in round robin. Segment mode: from a block reserved in memory. IDs are decimal strings (64-bit). count: 1..maxBatch (config tickets.maxBatch, default ${DEFAULT_MAX_BATCH}), default 1. 501 TICKETS_NOT_CONFIGURED when the service's config has no tickets section.`,
        params: { type: 'object', properties: { sequence: { type: 'string', maxLength: 200 } }, required: ['sequence'] },
        querystring: { type: 'object', properties: { count: { type: 'integer', minimum: 1, maximum: maxBatch, default: 1 } } },
        response: {
          200: { type: 'object', properties: { ids: { type: 'array', items: { type: 'string' } } }, required: ['ids'], additionalProperties: false },
          400: errorBody,
          404: errorBody,
          501: errorBody,
          503: errorBody,
        },
      },
    }, async (request) => {
      if (client === undefined) throw notConfigured();
      const { sequence } = request.params;
      const count = request.query.count ?? 1;
      const ids = count === 1 ? [await client.next(sequence)] : await client.nextBatch(sequence, count);
      return { ids: ids.map(formatId) };
    });

    app.get('/v1/tickets', {
      preValidation: refuseWhenNotConfigured,
      schema: {
        tags: ['tickets'],
        summary: 'Named sequences, the client mode and the health of each ticket server as this service sees it',
        description: '501 TICKETS_NOT_CONFIGURED when the service\'s config has no tickets section.',
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
          501: errorBody,
        },
      },
    }, async () => {
      if (client === undefined) throw notConfigured();
      return { mode: client.mode, sequences: client.sequences(), servers: client.serverStatus() };
    });
  };
}
