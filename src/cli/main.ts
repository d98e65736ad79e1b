#!/usr/bin/env node
import { Command, CommanderError } from 'commander';
import { fail, EXIT_BAD_INPUT } from './run-action.js';
import { registerCommands } from './commands/index.js';

// A reader that closed the pipe (`shardkit openapi | head -1`) has all it wanted: stop quietly
// instead of dying on an unhandled EPIPE with a stack trace. A failed write to stderr has no one
// left to tell; the exit code still says how the command went.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(0);
  fail(err);
});
process.stderr.on('error', () => {});

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
