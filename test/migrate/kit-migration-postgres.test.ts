/** kit-migration-suite.ts on two PostgreSQL 15 servers (8 object shards and 8 mod shards over both). */
import { describe } from 'node:test';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startPostgresServers } from '../storage/postgres-servers.js';
import { kitMigrationSuite } from './kit-migration-suite.js';

describe('migrate: embedded store -> PostgreSQL', () => {
  kitMigrationSuite('postgres', async () => {
    const pg = await startPostgresServers();
    const dir = mkdtempSync(join(tmpdir(), 'shardkit-migkit-pg-'));
    const configPath = join(dir, 'prod.json');
    writeFileSync(configPath, `${JSON.stringify(pg.config(), null, 2)}\n`);
    return {
      configPath,
      reset: () => pg.dropAllShards(),
      stop: async () => {
        await pg.stop();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  });
});
