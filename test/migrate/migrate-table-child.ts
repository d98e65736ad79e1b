// A table migration in its own process, for tests that kill -9 it mid-run: argv[2] is the
// JSON of TableMigrationCliOptions. (The test-only entry until `shardkit migrate` calls
// runTableMigration; then the tests can run the CLI instead.)
import { runTableMigration } from '../../src/cli/actions/migrate-table.js';
import { fail } from '../../src/cli/run-action.js';

try {
  await runTableMigration(JSON.parse(process.argv[2]!));
} catch (err) {
  fail(err);
}
