// What the CLI uses of failover without reaching into the folder (test/architecture/imports.test.ts).
export { isPostgresFleetConfig } from './pg-fleet-config.js';
export { openPgFleet, pgFleetEmergencyFailover, pgFleetPlannedFailover, pgFleetRebuildSlave, type PgFleet } from './pg-fleet-failover.js';
export { openFleet, slaveOf, type FleetContext } from './failover-context.js';
export { emergencyFailover } from './emergency-failover.js';
export { plannedFailover } from './planned-failover.js';
export { rebuildSlave } from './rebuild-slave.js';
export { gtidVariable, gtidWait } from './replica.js';
export { compareHosts } from './table-checksums.js';
export { pgEmergencyFailover, pgPlannedFailover, pgRebuildSlave } from './pg-failover.js';
