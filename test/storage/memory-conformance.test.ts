// The conformance suite run on a minimal in-memory backend: proves the suite relies on the
// ShardBackend interface only (and exercises its eager-backend branches).
import { defaultConfig, parseConfig, resolveSchema } from '../../src/config/config.js';
import { MemoryBackend } from '../conformance/memory-backend.js';
import { runStorageSuite } from '../conformance/storage-suite.js';

const schema = resolveSchema(parseConfig(defaultConfig({ shards: 16, pairs: 2 })));

runStorageSuite({
  name: 'memory (suite self-test)',
  factory: () => ({ backend: new MemoryBackend(schema), schema, hosts: ['h0', 'h1'], cleanup: () => {} }),
});
