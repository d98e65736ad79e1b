export { parseSourceUrl, looksLikeSourceUrl, redact, type SourceUrl, type SourceEngine } from './source-url.js';
export { TableMigration, type TableMigrationOptions, type TableMigrationReport, type MappingSpec, type Skip } from './table-migration.js';
export { STATE_KEY, type TableMigrationState } from './migration-state.js';
export { openTableSource } from './open-source.js';
export type { TableSource } from './table-source.js';
