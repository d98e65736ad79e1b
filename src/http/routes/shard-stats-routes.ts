import type { FastifyInstance } from 'fastify';
import type { ShardKit } from '../../kit/shard-kit.js';
import { errorResponses } from '../schemas.js';

const shardNumber = { type: 'integer', minimum: 0, maximum: 65535 } as const;
const counts = { type: 'array', items: { type: 'number' } } as const;

const statsQuery = {
  type: 'object',
  properties: {
    first: { ...shardNumber, description: 'First object shard (default 0)' },
    last: { ...shardNumber, description: 'Last object shard (default: the last of the map)' },
    refresh: { type: 'boolean', default: false, description: 'Recount the objects of these shards now and wait for it (otherwise counts up to 30 s old are shown and older ones are recounted in the background)' },
  },
  additionalProperties: false,
} as const;

const statsRange = {
  type: 'object',
  properties: {
    range: { type: 'array', items: { type: 'integer' }, minItems: 2, maxItems: 2 },
    master: { type: 'string' },
    slave: { type: 'string' },
    open: { type: 'boolean' },
    frozenBy: { type: 'string', description: 'The move whose freeze holds this range (docs/moves.md)' },
    reads: { ...counts, description: 'Storage calls that read each shard since the service started (index i is shard range[0] + i)' },
    writes: { ...counts, description: 'Storage calls that changed each shard since the service started' },
    rates: { type: 'array', items: { type: 'number' }, nullable: true, description: 'Reads + writes per second over the last rateSeconds; null on the first read of the counters' },
    objects: { type: 'array', items: { type: 'integer', nullable: true }, description: 'Rows of the object tables of each shard (soft-deleted included); null where not counted yet' },
  },
  required: ['range', 'master', 'open', 'reads', 'writes', 'rates', 'objects'],
} as const;

/** GET /v1/admin/shards/stats: the numbers behind the dashboard's heat map (docs/dashboard.md). */
export function shardStatsRoutes(kit: ShardKit) {
  return async (app: FastifyInstance): Promise<void> => {
    app.get<{ Querystring: { first?: number; last?: number; refresh?: boolean } }>('/v1/admin/shards/stats', {
      schema: {
        tags: ['admin'],
        summary: 'Requests and objects per object shard, by range of the shard map: which range is hot, which to move',
        description: 'Requests are the storage calls this service routed to each shard (a multi-get counts once per shard it reads; cache hits never reach a shard), since it started. Objects are counted by the database (one query per shard), cached for 30 s; refresh=true recounts the asked shards first. 400 INVALID_ARGUMENT for bad parameters (first after last, unknown ones), 404 UNKNOWN_SHARD past the map.',
        querystring: statsQuery,
        response: {
          200: {
            type: 'object',
            properties: {
              version: { type: 'integer', description: 'The shard map version of the ranges' },
              since: { type: 'integer', description: 'When this service started counting (ms since the epoch)' },
              now: { type: 'integer' },
              rateSeconds: { type: 'number', nullable: true, description: 'How many seconds the rates cover' },
              objectsAt: { type: 'integer', nullable: true, description: 'When the oldest object count shown was taken (ms since the epoch)' },
              totals: {
                type: 'object',
                properties: { reads: { type: 'number' }, writes: { type: 'number' }, objects: { type: 'integer', nullable: true } },
                required: ['reads', 'writes', 'objects'],
              },
              ranges: { type: 'array', items: statsRange },
            },
            required: ['version', 'since', 'now', 'rateSeconds', 'objectsAt', 'totals', 'ranges'],
          },
          ...errorResponses,
        },
      },
    }, async (request) => {
      const q = request.query;
      return kit.shardStats({
        ...(q.first !== undefined ? { first: q.first } : {}),
        ...(q.last !== undefined ? { last: q.last } : {}),
        refresh: q.refresh === true,
      });
    });
  };
}
