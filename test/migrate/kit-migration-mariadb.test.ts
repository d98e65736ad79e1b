/** kit-migration-suite.ts on a MariaDB dev cluster (one pair, 8 object shards, 8 mod shards). */
import { describe } from 'node:test';
import { resolveSchema } from '../../src/config/config.js';
import { MysqlBackend } from '../../src/storage/mysql/index.js';
import { startTestCluster } from '../mysql/cluster-fixture.js';
import { kitMigrationSuite } from './kit-migration-suite.js';

describe('migrate: embedded store -> MariaDB', () => {
  kitMigrationSuite('mariadb', async () => {
    const started = await startTestCluster({ pairs: 1, shards: 8, modShards: 8, prefix: 'shardkit-migkit-' });
    const config = started.cluster.config();
    if (config.storage.backend !== 'mysql') throw new Error('dev cluster config is not mysql');
    const schema = resolveSchema(config);
    const storage = { user: config.storage.user, ...(config.storage.password !== undefined ? { password: config.storage.password } : {}) };
    const hosts = Object.fromEntries(Object.entries(config.hosts).map(([n, h]) => [n, { host: h.host!, port: h.port! }]));
    const admin = new MysqlBackend({ hosts, storage, schema });
    const masters = [...new Set(config.shardMap.ranges.map((r) => r.master))];
    return {
      configPath: started.cluster.configPath,
      reset: async () => {
        for (const host of masters) for (const shard of (await admin.tablesOnHost(host)).keys()) await admin.dropShard({ host, shard, fleet: 'objects' });
        for (const host of masters) for (const shard of (await admin.tablesOnHost(host)).keys()) await admin.dropShard({ host, shard, fleet: 'lookups' });
      },
      stop: async () => {
        await admin.close();
        await started.stop();
      },
    };
  });
});
