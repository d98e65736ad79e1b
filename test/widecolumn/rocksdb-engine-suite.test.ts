// The wide-column conformance suite on the embedded RocksDB engine.
import { join } from 'node:path';
import { rocksDbDriver } from '../../src/widecolumn/service.js';
import { runWideColumnSuite } from '../conformance/widecolumn-suite.js';
import { runWideColumnModelTests } from '../conformance/widecolumn-model.js';
import { tempDir } from './helpers.js';

runWideColumnSuite({
  name: 'rocksdb',
  factory: async ({ clock }) => {
    const tmp = tempDir();
    const engine = await rocksDbDriver(join(tmp.dir, 'widecolumn'), { shards: 64, clock }).open();
    return {
      engine,
      async cleanup() {
        await engine.close();
        tmp.cleanup();
      },
    };
  },
});

// The model tests again with every multi-version row read through its head region (skip budget
// 0) and folds every 2 puts: reads of versions=N then come from the heads' lists of newest
// timestamps and one multi-get (row-reader.ts planFromHead) as often as the data allows, mixed
// with logged puts, backfills, deletes and compactions, against the same oracle.
runWideColumnModelTests({
  name: 'rocksdb, reads from head lists',
  factory: async ({ clock }) => {
    const tmp = tempDir();
    const engine = await rocksDbDriver(join(tmp.dir, 'widecolumn'), { shards: 64, clock, scanSkipBudget: 0, foldAfter: 2 }).open();
    return {
      engine,
      async cleanup() {
        await engine.close();
        tmp.cleanup();
      },
    };
  },
});
