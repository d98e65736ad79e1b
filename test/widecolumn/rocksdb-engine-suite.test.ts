// The wide-column conformance suite on the embedded RocksDB engine.
import { join } from 'node:path';
import { rocksDbDriver } from '../../src/widecolumn/service.js';
import { runWideColumnSuite } from '../conformance/widecolumn-suite.js';
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
