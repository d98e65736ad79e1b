import type { Command } from 'commander';
import { action } from '../run-action.js';

// Only definitions here: the implementation loads when the command runs.
export function register(program: Command): void {
  const auth = program.command('auth').description('Bearer tokens with scopes for `serve --auth-file` (docs/security.md)');
  auth
    .command('token')
    .description('Make a token: append its SHA-256 hash and scope to FILE (created 0600 if needed) and print the token once on stdout')
    .requiredOption('--scope <scope>', 'read (GET and batch reads), write (also every other data route) or admin (also /v1/admin/)')
    .requiredOption('--file <file>', 'the auth file serve reads (--auth-file or SHARDKIT_AUTH_FILE)')
    .option('--label <name>', 'a name kept beside the hash in the file (who or what the token is for)')
    .addHelpText('after', `
Only the hash is stored: the printed token cannot be shown again. A running serve picks the new
token up on SIGHUP (kill -HUP <pid>); delete a line and SIGHUP to revoke one.

Example:
  shardkit auth token --scope read --file ./data/tokens --label dashboard`)
    .action(action(async (opts: { scope: string; file: string; label?: string }) => {
      const { createToken } = await import('../../http/auth-tokens.js');
      process.stdout.write(`${createToken(opts.file, opts.scope as 'read', opts.label)}\n`);
    }));
}
