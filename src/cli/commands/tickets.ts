import type { Command } from 'commander';
import { loadConfigFile } from '../../config/config.js';
import { ShardKitError } from '../../errors.js';
import { formatId } from '../../ids/codec.js';
import { withDeadline } from '../../tickets/deadline.js';
import { TicketClient } from '../../tickets/ticket-client.js';
import { initTicketServers } from '../../tickets/tickets-init.js';
import { resolveTickets, type ResolvedTickets } from '../../tickets/tickets-config.js';
import { action, intOption } from '../run-action.js';
import { devUpExtensionOptions } from './dev.js';
import { MAX_DEV_TICKET_SERVERS, ticketServersExtension } from '../../tickets/dev-ticket-servers.js';

const DEFAULT_CONFIG = 'shardkit.json';

// `shardkit dev up --ticket-servers N`, through the dev cluster's extension hook.
devUpExtensionOptions.push({
  flags: '--ticket-servers <n>',
  description: `also start N ticket servers (role ticket; server i with auto_increment_increment=N, auto_increment_offset=i), create their tables and add them with the sequences photos, accounts, offline_tasks, groups to DIR/shardkit.json (1..${MAX_DEV_TICKET_SERVERS})`,
  parse: intOption('--ticket-servers', 1, MAX_DEV_TICKET_SERVERS),
  key: 'ticketServers',
  extension: (value) => ticketServersExtension(value as number),
});

function ticketsConfig(path: string): ResolvedTickets {
  const config = loadConfigFile(path);
  if (!config.tickets) {
    throw new ShardKitError('INVALID_CONFIG', `config file ${path} has no "tickets" section (ticket servers and sequences; see docs/tickets.md)`);
  }
  return resolveTickets(config.tickets);
}

export function register(program: Command): void {
  const tickets = program
    .command('tickets')
    .description('Flickr-style ticket servers: unique 64-bit IDs from named sequences (docs/tickets.md)');

  tickets
    .command('init')
    .description('Create the tickets database and one Tickets64-style table per sequence on every ticket server (idempotent); checks each server\'s auto_increment_increment/offset')
    .option('--config <file>', 'config file with a "tickets" section', DEFAULT_CONFIG)
    .option('--json', 'print the result of every server as JSON')
    .action(action(async (opts: { config: string; json?: boolean }) => {
      const config = ticketsConfig(opts.config);
      const results = await initTicketServers(config, {
        onServer: (r, done, total) => {
          if (opts.json) return;
          const what = r.ok
            ? `${r.created.length ? `created ${r.created.join(', ')}` : 'nothing to create'}${r.existing.length ? `; existing ${r.existing.join(', ')}` : ''}`
            : `FAILED: ${r.error}`;
          process.stdout.write(`[${done}/${total}] ${r.server}: ${what}\n`);
        },
      });
      if (opts.json) process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
      for (const r of results) for (const w of r.warnings) process.stderr.write(`shardkit: warning: ${w}\n`);
      const failed = results.filter((r) => !r.ok);
      if (failed.length > 0) {
        throw new ShardKitError('TICKET_SERVERS_UNAVAILABLE', `tickets init failed on ${failed.map((r) => `${r.server} (${r.error})`).join(', ')}`);
      }
    }));

  tickets
    .command('next')
    .description('Print new IDs of a sequence, one per line (classic mode: one REPLACE per ID, round robin over the servers)')
    .argument('<sequence>', 'sequence name from the config (e.g. photos)')
    .option('--count <n>', 'how many IDs', intOption('--count', 1, 1_000_000), 1)
    .option('--config <file>', 'config file with a "tickets" section', DEFAULT_CONFIG)
    .option('--segment', 'reserve all of them as one block in one round trip (segment mode) instead of one REPLACE each')
    .action(action(async (sequence: string, opts: { count: number; config: string; segment?: boolean }) => {
      const config = ticketsConfig(opts.config);
      // Segment mode reserves exactly --count: a one-shot process must not burn a prefetched block.
      const client = new TicketClient(config, opts.segment
        ? { mode: 'segment', prefetch: false, segment: { initialSize: opts.count, minSize: 1, maxSize: Math.max(opts.count, config.segment.maxSize) } }
        : { mode: 'classic' });
      try {
        const ids = opts.count === 1 ? [await client.next(sequence)] : await client.nextBatch(sequence, opts.count);
        process.stdout.write(`${ids.map(formatId).join('\n')}\n`);
      } finally {
        // Never let a stuck connection keep a one-shot command alive.
        await withDeadline(client.close(), 2000, 'closing ticket connections').catch(() => undefined);
      }
    }));
}
