// What the CLI uses of failover without reaching into the folder (test/architecture/imports.test.ts).
export { isPostgresFleetConfig } from './pg-fleet-config.js';
export { openPgFleet, pgFleetEmergencyFailover, pgFleetPlannedFailover, pgFleetRebuildSlave, type PgFleet } from './pg-fleet-failover.js';
