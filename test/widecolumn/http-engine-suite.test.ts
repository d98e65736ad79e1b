// The wide-column conformance suite (with its model test) through the HTTP routes, over the
// embedded RocksDB engine: the JSON answers must agree with the same oracle as the library.
import { join } from 'node:path';
import { rocksDbDriver } from '../../src/widecolumn/service.js';
import { runWideColumnSuite } from '../conformance/widecolumn-suite.js';
import { tempDir } from './helpers.js';
import { HttpEngine } from './http-engine.js';

runWideColumnSuite({
  name: 'http over rocksdb',
  factory: async ({ clock }) => {
    const tmp = tempDir();
    const engine = await HttpEngine.over(await rocksDbDriver(join(tmp.dir, 'widecolumn'), { shards: 64, clock }).open());
    return {
      engine,
      async cleanup() {
        await engine.close();
        tmp.cleanup();
      },
    };
  },
});
