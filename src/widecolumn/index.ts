export type { WideColumnEngine, WideColumnEngineDriver, EngineCompactionReport, EngineBackupReport, EngineRestoreReport, EngineExportReport } from './engine.js';
export { WideColumnStore, DEFAULT_SHARDS, type WideColumnStoreOptions } from './wide-column-store.js';
export { WideColumnSnapshot } from './snapshot.js';
export { compact, type CompactionReport } from './compaction.js';
export { backup, restore, readManifest, BACKUP_FORMAT, type BackupManifest, type RestoreReport } from './backup.js';
export { exportParquet, exportSchema, type ExportReport } from './parquet-export.js';
export {
  openWideColumnService,
  rocksDbDriver,
  startCompactionSchedule,
  parseWideColumnConfig,
  wideColumnConfigSchema,
  wideColumnDir,
  storeOptions,
  type WideColumnConfig,
  type WideColumnService,
} from './service.js';
export { DEFAULT_LIMITS, type WideColumnLimits } from './limits.js';
export { DATASET_NAME, MAX_VERSIONS_LIMIT, type DatasetConfig, type DatasetSettings } from './dataset-config.js';
export type * from './types.js';
