export { MyrocksEngine, myrocksDriver, type MyrocksEngineOptions, type MyrocksCompactionReport } from './myrocks-engine.js';
export { wcDatabaseName, parseWcDatabaseName, WC_DATABASE_PREFIX } from './myrocks-ddl.js';
