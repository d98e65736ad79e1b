// The ShardKit-level suite (kit-suite.ts) on postgres; one server set for the whole file.
import { runKitSuite } from './kit-suite.js';
import { postgresTarget } from './kit-server-targets.js';

runKitSuite('postgres', postgresTarget);
