import type { Command } from 'commander';
import { action, intOption } from '../run-action.js';
import { devUpExtensionOptions } from './dev.js';

const DEFAULT_CONFIG = 'shardkit.json';
/**
 * MAX_DEV_TICKET_SERVERS of src/ops/dev-ticket-servers.ts, for the help text and the parser:
 * importing that module would load mysql2 and zod for every `--help`. A test keeps them equal.
 */
export const HELP_MAX_DEV_TICKET_SERVERS = 16;

// `shardkit dev up --ticket-servers N`, through the dev cluster's extension hook.
devUpExtensionOptions.push({
  flags: '--ticket-servers <n>',
  description: `also start N ticket servers (role ticket; server i with auto_increment_increment=N, auto_increment_offset=i), create their tables and add them with the sequences photos, accounts, offline_tasks, groups to DIR/shardkit.json (1..${HELP_MAX_DEV_TICKET_SERVERS})`,
  parse: intOption('--ticket-servers', 1, HELP_MAX_DEV_TICKET_SERVERS),
  key: 'ticketServers',
  extension: async (value) => (await import('../../ops/dev-ticket-servers.js')).ticketServersExtension(value as number),
});

export function register(program: Command): void {
  const tickets = program
    .command('tickets')
    .description('Flickr-style ticket servers: unique 64-bit IDs from named sequences (docs/tickets.md)');

  tickets
    .command('init')
    .description('Create the tickets database and one Tickets64-style table per sequence on every ticket server (idempotent); checks each server\'s auto_increment_increment/offset')
    .option('--config <file>', 'config file with a "tickets" section', DEFAULT_CONFIG)
    .option('--json', 'print the result of every server as JSON')
    .action(action(async (opts: { config: string; json?: boolean }) => (await import('../actions/tickets.js')).ticketsInitCommand(opts)));

  tickets
    .command('next')
    .description('Print new IDs of a sequence, one per line (classic mode: one REPLACE per ID, round robin over the servers)')
    .argument('<sequence>', 'sequence name from the config (e.g. photos)')
    .option('--count <n>', 'how many IDs', intOption('--count', 1, 1_000_000), 1)
    .option('--config <file>', 'config file with a "tickets" section', DEFAULT_CONFIG)
    .option('--segment', 'reserve all of them as one block in one round trip (segment mode) instead of one REPLACE each')
    .action(action(async (sequence: string, opts: { count: number; config: string; segment?: boolean }) => (await import('../actions/tickets.js')).ticketsNextCommand(sequence, opts)));
}
