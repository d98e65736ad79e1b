// The ShardKit-level suite (kit-suite.ts) on mariadb; one server set for the whole file.
import { runKitSuite } from './kit-suite.js';
import { mariadbTarget } from './kit-server-targets.js';

runKitSuite('mariadb', mariadbTarget);
