import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultConfig, parseConfig, resolveSchema } from '../../config/config.js';
import { buildApp } from '../../http/app.js';
import { ticketsRoutes, widecolumnDisabledRoutes } from '../../http/routes/index.js';
import { SqliteBackend } from '../../storage/sqlite/index.js';
import { ShardKit } from '../../kit/shard-kit.js';
import { ShardMap } from '../../topology/shard-map.js';

/**
 * The OpenAPI document of every route `shardkit serve` can mount: objects, mappings, lookups,
 * system, tickets, wide-column and its admin routes. Built without storage, ticket servers or a
 * wide-column store: only the route schemas are collected.
 */
export async function openapiDocument(): Promise<unknown> {
  const config = parseConfig(defaultConfig());
  const schema = resolveSchema(config);
  // A kit that is never called: building the app only collects the route schemas.
  const kit = new ShardKit({ backend: new SqliteBackend({ root: join(tmpdir(), 'shardkit-openapi-unused'), schema }), schema, shardMap: ShardMap.fromJSON(config.shardMap) });
  const app = await buildApp({
    kit,
    metrics: true,
    // Tickets as a service without a tickets section mounts them: same routes, same schemas.
    plugins: [ticketsRoutes(), widecolumnDisabledRoutes()],
  });
  try {
    return app.swagger();
  } finally {
    await app.close();
    await kit.close();
  }
}
