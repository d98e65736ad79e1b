import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultConfig, parseConfig, resolveSchema } from '../../config/config.js';
import { buildApp } from '../../http/app.js';
import { SqliteBackend } from '../../storage/sqlite/sqlite-backend.js';
import { ShardKit } from '../../store/shard-kit.js';
import { ShardMap } from '../../topology/shard-map.js';

/** The OpenAPI document of the object, mapping and lookup routes, built without touching storage. */
export async function openapiDocument(): Promise<unknown> {
  const config = parseConfig(defaultConfig());
  const schema = resolveSchema(config);
  // A kit that is never called: building the app only collects the route schemas.
  const kit = new ShardKit({ backend: new SqliteBackend({ root: join(tmpdir(), 'shardkit-openapi-unused'), schema }), schema, shardMap: ShardMap.fromJSON(config.shardMap) });
  const app = await buildApp({ kit, metrics: true });
  try {
    return app.swagger();
  } finally {
    await app.close();
    await kit.close();
  }
}
