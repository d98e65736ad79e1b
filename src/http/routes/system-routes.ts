import type { FastifyInstance } from 'fastify';
import type { Registry } from 'prom-client';
import type { ShardKit } from '../../kit/shard-kit.js';
import { withMoveProgress } from '../../topology/move-progress-records.js';

const pair = { type: 'object', properties: { master: { type: 'string' }, slave: { type: 'string' } }, required: ['master'] } as const;
const span = { type: 'array', items: { type: 'integer' }, minItems: 2, maxItems: 2 } as const;
const range = {
  type: 'object',
  properties: {
    range: span,
    master: { type: 'string' },
    slave: { type: 'string' },
    open: { type: 'boolean' },
    // Set while a shard move cuts the range over (docs/moves.md): writes are held up to holdMs.
    frozen: {
      type: 'object',
      properties: { id: { type: 'string' }, source: pair, target: pair, frozenAt: { type: 'integer' }, holdMs: { type: 'integer' } },
      required: ['id', 'source', 'target', 'frozenAt', 'holdMs'],
    },
  },
  required: ['range', 'master'],
} as const;
/** A shard move recorded in the map (docs/moves.md). */
const move = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    kind: { type: 'string', enum: ['move', 'failover'] },
    range: span,
    source: pair,
    target: pair,
    phase: { type: 'string' },
    holdMs: { type: 'integer' },
    startedAt: { type: 'integer' },
    updatedAt: { type: 'integer' },
    detail: { type: 'object', additionalProperties: true },
    // Written by the mover at most once a second (docs/moves.md "How to watch it").
    progress: {
      type: 'object',
      properties: {
        phase: { type: 'string' },
        shardsDone: { type: 'integer' },
        shardsTotal: { type: 'integer' },
        rowsCopied: { type: 'integer' },
        rowsTotal: { type: 'integer' },
        bytesCopied: { type: 'integer' },
        rowsPerSecond: { type: 'number' },
        bytesPerSecond: { type: 'number' },
        etaSeconds: { type: 'number' },
        tables: {
          type: 'array',
          items: { type: 'object', properties: { table: { type: 'string' }, rowsCopied: { type: 'integer' }, bytesCopied: { type: 'integer' } }, required: ['table', 'rowsCopied', 'bytesCopied'] },
        },
        lag: { type: 'number' },
        // What the mover does inside the phase (lag gate, verify, settle, services' gate) and its verify's tables.
        step: { type: 'string' },
        verifiedTables: { type: 'integer' },
        verifyTables: { type: 'integer' },
        at: { type: 'integer' },
      },
      required: ['phase', 'at'],
    },
  },
  required: ['id', 'kind', 'range', 'source', 'target', 'phase', 'holdMs', 'startedAt', 'updatedAt'],
} as const;

/** GET /v1/heal: the live supervisors' records (src/topology/heal-records.ts). */
const healBody = {
  type: 'object',
  properties: {
    supervisors: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          id: { type: 'string' },
          at: { type: 'integer' },
          mode: { type: 'string', enum: ['observe', 'act'] },
          acting: { type: 'boolean' },
          hostname: { type: 'string' },
          pid: { type: 'integer' },
          suspects: { type: 'array', items: { type: 'object', properties: { host: { type: 'string' }, since: { type: 'integer' } }, required: ['host', 'since'] } },
          pairs: {
            type: 'array',
            items: {
              type: 'object',
              properties: { master: { type: 'string' }, slave: { type: 'string' }, verdict: { type: 'string' }, reason: { type: 'string' }, since: { type: 'integer' } },
              required: ['master', 'slave', 'verdict', 'since'],
            },
          },
        },
        required: ['id', 'at', 'mode', 'acting', 'hostname', 'pid', 'suspects', 'pairs'],
      },
    },
  },
  required: ['supervisors'],
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
              moves: { type: 'array', items: move },
            },
            required: ['version', 'ranges', 'modShards'],
          },
        },
      },
    }, async () => withMoveProgress((await kit.shardMap()).toJSON(), await kit.moveProgress()));

    app.get('/v1/heal', {
      schema: {
        tags: ['system'],
        summary: 'What the running heal supervisors see (docs/failover.md "Automatic failover"): each pair\'s verdict and the masters they cannot reach; empty when none runs',
        response: { 200: healBody },
      },
    }, async () => {
      const now = Date.now();
      const supervisors = [...(await kit.healStatus())]
        .filter(([, s]) => now <= s.at + s.ttlMs)
        .map(([id, s]) => ({ id, at: s.at, mode: s.mode, acting: s.acting, hostname: s.hostname, pid: s.pid, suspects: s.suspects, pairs: s.pairs }));
      return { supervisors };
    });

    const named = (extra: Record<string, { type: string }>, required: string[]) =>
      ({ type: 'array', items: { type: 'object', properties: { name: { type: 'string' }, table: { type: 'string' }, ...extra }, required: ['name', 'table', ...required] } }) as const;
    // Built once: the schema is fixed for the life of a kit (a change means a restart).
    const schemaBody = {
      types: kit.schema.types.map((t) => ({ name: t.name, id: t.id, table: t.table })),
      mappings: kit.schema.mappings.map((m) => ({ name: m.name, from: m.from, to: m.to, table: m.table })),
      keyspaces: kit.schema.keyspaces.map((k) => ({ name: k.name, table: k.table })),
    };
    app.get('/v1/schema', {
      schema: {
        tags: ['system'],
        summary: 'The object types (with their 10-bit type ids), mappings and lookup keyspaces this service serves, and their tables',
        response: {
          200: {
            type: 'object',
            properties: {
              types: named({ id: { type: 'integer' } }, ['id']),
              mappings: named({ from: { type: 'string' }, to: { type: 'string' } }, ['from', 'to']),
              keyspaces: named({}, []),
            },
            required: ['types', 'mappings', 'keyspaces'],
          },
        },
      },
    }, async () => schemaBody);

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
