/** The MariaDB CI chaos schedule (semi-sync pairs): chaos-ci.ts. `npm run chaos` runs longer schedules. */
import { chaosCiTest } from './chaos-ci.js';

chaosCiTest('mariadb');
