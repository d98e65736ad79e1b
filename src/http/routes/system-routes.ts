import type { FastifyInstance } from 'fastify';
import type { Registry } from 'prom-client';
import type { ShardKit } from '../../store/shard-kit.js';

const range = {
  type: 'object',
  properties: {
    range: { type: 'array', items: { type: 'integer' }, minItems: 2, maxItems: 2 },
    master: { type: 'string' },
    slave: { type: 'string' },
    open: { type: 'boolean' },
  },
  required: ['range', 'master'],
} as const;

/** Topology, health, Prometheus metrics and the OpenAPI document. */
export function systemRoutes(kit: ShardKit, registry: Registry | undefined) {
  return async (app: FastifyInstance): Promise<void> => {
    app.get('/v1/topology', {
      schema: {
        tags: ['system'],
        summary: 'The shard map this service routes with (follows the topology store)',
        response: {
          200: {
            type: 'object',
            properties: {
              version: { type: 'integer' },
              ranges: { type: 'array', items: range },
              modShards: { type: 'object', properties: { count: { type: 'integer' }, ranges: { type: 'array', items: range } }, required: ['count', 'ranges'] },
            },
            required: ['version', 'ranges', 'modShards'],
          },
        },
      },
    }, async () => (await kit.shardMap()).toJSON());

    app.get('/healthz', {
      schema: {
        tags: ['system'],
        summary: 'Liveness: the service answers and has a shard map',
        response: {
          200: {
            type: 'object',
            properties: { status: { type: 'string' }, backend: { type: 'string' }, topologyVersion: { type: 'integer' } },
            required: ['status', 'backend', 'topologyVersion'],
          },
        },
      },
    }, async () => ({ status: 'ok', backend: kit.backend.kind, topologyVersion: (await kit.shardMap()).version }));

    if (registry !== undefined) {
      app.get('/metrics', {
        schema: { tags: ['system'], summary: 'Prometheus metrics (text exposition format)', produces: ['text/plain'] },
      }, async (_request, reply) => {
        const text = await registry.metrics();
        return reply.type(registry.contentType).send(text);
      });
    }

    app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  };
}
