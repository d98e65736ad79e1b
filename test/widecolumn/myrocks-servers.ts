import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isShardKitError } from '../../src/errors.js';
import { pickFreePort } from '../../src/ops/free-port.js';
import { MariadbInstance } from '../../src/ops/mariadb/mariadb-instance.js';
import { ShardMap } from '../../src/topology/shard-map.js';
import { MyrocksEngine, type MyrocksEngineOptions } from '../../src/widecolumn/myrocks/index.js';

/** Where Debian's mariadb-plugin-rocksdb puts MyRocks; the tests need it (scripts/install-test-deps.sh). */
const MYROCKS_PLUGIN = '/usr/lib/mysql/plugin/ha_rocksdb.so';

/**
 * Two MariaDB servers with MyRocks loaded (hosts A and B), for one test file: wide-column shards
 * 0..3 on A, 4..7 on B. `engine()` gives an engine over both with its shards freshly created
 * (every wide-column database dropped first), so each test starts empty.
 */
export async function startMyrocksServers(): Promise<{
  servers: Record<'A' | 'B', MariadbInstance>;
  shardMap: ShardMap;
  hosts: MyrocksEngineOptions['hosts'];
  engine(options?: Partial<MyrocksEngineOptions>): Promise<MyrocksEngine>;
  reset(): Promise<void>;
  stop(): Promise<void>;
}> {
  // No silent skip: without the plugin these tests fail and say what to install.
  if (!existsSync(MYROCKS_PLUGIN)) throw new Error(`MyRocks is not installed (${MYROCKS_PLUGIN}): run scripts/install-test-deps.sh (mariadb-plugin-rocksdb)`);
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-myr-'));
  const servers = {} as Record<'A' | 'B', MariadbInstance>;
  const stop = async () => {
    await Promise.all(Object.values(servers).map((s) => s.stop().catch(() => undefined)));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    let id = 1;
    for (const name of ['A', 'B'] as const) {
      const s = await MariadbInstance.create({ name, dir: join(dir, name), serverId: id++, plugins: ['ha_rocksdb'] });
      for (let attempt = 0; ; attempt++) {
        try {
          await s.start();
          break;
        } catch (err) {
          if (attempt < 3 && isShardKitError(err) && err.details?.portInUse) s.setPort(await pickFreePort());
          else throw err;
        }
      }
      servers[name] = s;
    }
  } catch (err) {
    await stop();
    throw err;
  }
  const shardMap = ShardMap.fromJSON({
    version: 1,
    ranges: [{ range: [0, 3], master: 'A' }, { range: [4, 7], master: 'B' }],
    modShards: { count: 8, ranges: [{ range: [0, 3], master: 'A' }, { range: [4, 7], master: 'B' }] },
  });
  const hosts = { A: { socket: servers.A.socket }, B: { socket: servers.B.socket } };
  const reset = async () => {
    for (const s of Object.values(servers)) {
      const dbs = await s.admin<Array<{ n: string }>>("SELECT SCHEMA_NAME AS n FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE 'wc%'");
      for (const d of dbs) if (/^wc\d{5}$/.test(d.n)) await s.admin(`DROP DATABASE \`${d.n}\``);
    }
  };
  const engine = async (options: Partial<MyrocksEngineOptions> = {}) => {
    const { userInfo } = await import('node:os');
    const e = new MyrocksEngine({ hosts, shardMap: () => shardMap, storage: { user: userInfo().username, connectTimeoutMs: 1000 }, ...options });
    await e.createShards();
    return e;
  };
  return { servers, shardMap, hosts, engine, reset, stop };
}
