/** The PostgreSQL CI chaos schedule (synchronous standbys): chaos-ci.ts. `npm run chaos -- --engine postgres` runs longer ones. */
import { chaosCiTest } from './chaos-ci.js';

chaosCiTest('postgres');
