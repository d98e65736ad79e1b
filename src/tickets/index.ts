export { TicketClient, createTicketClient, type TicketClientOptions, type TicketMode } from './ticket-client.js';
export { initTicketServers, ticketTableDdl, TICKET_TABLE_ENGINE, type TicketInitServerResult, type TicketInitOptions } from './tickets-init.js';
export {
  ticketsConfigSchema,
  ticketServerSchema,
  segmentConfigSchema,
  resolveTickets,
  type TicketsConfig,
  type TicketsConfigInput,
  type ResolvedTickets,
  type ResolvedTicketServer,
  type ResolvedSequence,
  type SegmentConfig,
} from './tickets-config.js';
export { ticketServerSettings } from './ticket-server-settings.js';
export { SegmentAllocator, type BlockSource } from './segment-allocator.js';
export { ServerSelector } from './server-selector.js';
export { TicketServer, type ReservedBlock } from './ticket-server.js';
