export { MyrocksEngine, myrocksDriver, type MyrocksEngineOptions, type MyrocksCompactionReport } from './myrocks-engine.js';
export { wcDatabaseName, parseWcDatabaseName, WC_DATABASE_PREFIX } from './myrocks-ddl.js';
export { openMyrocksEngine, myrocksConfigSchema, type MyrocksConfig, type MyrocksFleet } from './myrocks-config.js';
