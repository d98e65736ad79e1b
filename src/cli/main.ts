#!/usr/bin/env node
import { Command, CommanderError } from 'commander';
import { fail, EXIT_BAD_INPUT } from './run-action.js';
import { registerCommands } from './commands/index.js';

const program = new Command('shardkit')
  .description('Sharded object, mapping and lookup store with 64-bit IDs, ticket servers and a wide-column store')
  .version('0.1.0')
  .showSuggestionAfterError(true)
  .exitOverride()
  .configureOutput({ writeErr: (s) => process.stderr.write(s) });

try {
  await registerCommands(program);
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) {
    // --help and --version exit 0; commander already printed one line for usage errors.
    process.exit(err.exitCode === 0 ? 0 : EXIT_BAD_INPUT);
  }
  fail(err);
}
