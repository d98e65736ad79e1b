// The ShardKit-level suite (kit-suite.ts) on sqlite; one server set for the whole file.
import { runKitSuite } from './kit-suite.js';
import { sqliteTarget } from './kit-targets.js';

runKitSuite('sqlite', sqliteTarget);
