import { loadConfigFile } from '../../config/config.js';
import { ShardKitError } from '../../errors.js';
import { formatId } from '../../ids/codec.js';
import { withDeadline } from '../../tickets/deadline.js';
import { TicketClient } from '../../tickets/ticket-client.js';
import { initTicketServers } from '../../tickets/tickets-init.js';
import { resolveTickets, type ResolvedTickets } from '../../tickets/tickets-config.js';

function ticketsConfig(path: string): ResolvedTickets {
  const config = loadConfigFile(path);
  if (!config.tickets) {
    throw new ShardKitError('INVALID_CONFIG', `config file ${path} has no "tickets" section (ticket servers and sequences; see docs/tickets.md)`);
  }
  return resolveTickets(config.tickets);
}

export async function ticketsInitCommand(opts: { config: string; json?: boolean }): Promise<void> {
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
}

export async function ticketsNextCommand(sequence: string, opts: { count: number; config: string; segment?: boolean }): Promise<void> {
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
}
