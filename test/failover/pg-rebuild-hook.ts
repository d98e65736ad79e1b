/**
 * What an operator's SHARDKIT_REBUILD_COMMAND does on the slave's machine, for the PostgreSQL fleet
 * test (test/failover/postgres-fleet.test.ts): replace the slave's data directory with a base
 * backup of the master (pg_basebackup -R), name it in primary_conninfo (application_name = its
 * host name, for a synchronous standby), start it. The dev cluster in SHARDKIT_TEST_DEV_DIR holds
 * the servers; the hosts come from the variables shardkit sets.
 */
import { DevCluster } from '../../src/ops/dev-cluster.js';
import { pgServer } from '../../src/ops/dev/dev-postgres.js';

const c = DevCluster.require(process.env.SHARDKIT_TEST_DEV_DIR!);
const slave = pgServer(c, process.env.SHARDKIT_REBUILD_SLAVE!);
const master = pgServer(c, process.env.SHARDKIT_REBUILD_MASTER!);
await slave.stop().catch(() => slave.kill());
await slave.initStandbyOf(master);
slave.setPrimary(master);
await slave.start();
