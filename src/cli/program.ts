import { Command, CommanderError } from 'commander';
import { fail, EXIT_BAD_INPUT } from './run-action.js';
import { VERSION } from '../util/version.js';
import { registerCommands } from './commands/index.js';

/**
 * Runs one shardkit command line (`argv` as in process.argv: node, script, then the arguments).
 * Output goes to process.stdout/stderr and the outcome to process.exit / process.exitCode, as for
 * the binary (src/cli/main.ts). A fresh program per call, so the tests can run a command line
 * inside their own process (test/cli/cli-harness.ts) instead of starting a Node process for it.
 */
export async function runCli(argv: readonly string[]): Promise<void> {
  const program = new Command('shardkit')
    .description('Sharded object, mapping and lookup store with 64-bit IDs, ticket servers and a wide-column store')
    .version(VERSION)
    .showSuggestionAfterError(true)
    .exitOverride()
    .configureOutput({ writeErr: (s) => process.stderr.write(s) });
  try {
    await registerCommands(program);
    await program.parseAsync([...argv]);
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version exit 0; commander already printed one line for usage errors.
      process.exit(err.exitCode === 0 ? 0 : EXIT_BAD_INPUT);
    }
    fail(err);
  }
}
