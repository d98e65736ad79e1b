#!/usr/bin/env node
import { fail } from './run-action.js';
import { runCli } from './program.js';

// A reader that closed the pipe (`shardkit openapi | head -1`) has all it wanted: stop quietly
// instead of dying on an unhandled EPIPE with a stack trace. A failed write to stderr has no one
// left to tell; the exit code still says how the command went.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(0);
  fail(err);
});
process.stderr.on('error', () => {});

await runCli(process.argv);
