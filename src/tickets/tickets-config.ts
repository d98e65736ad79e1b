import { z } from 'zod';
import { ShardKitError } from '../errors.js';

// Same rule as src/config's `identifier`, repeated here because config.ts imports this file.
const identifier = z.string().regex(/^[a-z][a-z0-9_]{0,62}$/, 'must match ^[a-z][a-z0-9_]{0,62}$');
const serverName = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/, 'server names are 1-64 of [A-Za-z0-9_.-]');

/** One ticket server: a MySQL/MariaDB reached over TCP (host/port) or a unix socket. */
export const ticketServerSchema = z.object({
  name: serverName,
  host: z.string().default('127.0.0.1'),
  port: z.number().int().min(1).max(65535).default(3306),
  socket: z.string().optional(),
  user: z.string().optional(),
  password: z.string().optional(),
  /** This server's `auto_increment_offset` (1..increment); defaults to its position in the list, from 1. */
  offset: z.number().int().min(1).optional(),
}).strict();

const sequenceSchema = z.union([identifier, z.object({ name: identifier, table: identifier.optional() }).strict()]);

/** Leaf-style segment mode: blocks of K IDs reserved in one round trip, K adapting to demand. */
export const segmentConfigSchema = z.object({
  /** K of the first block of each sequence. */
  initialSize: z.number().int().min(1).max(100_000_000).default(1000),
  minSize: z.number().int().min(1).max(100_000_000).default(10),
  maxSize: z.number().int().min(1).max(100_000_000).default(1_000_000),
  /** Fraction of the current block used when the next one is fetched in the background. */
  prefetchAt: z.number().gt(0).lt(1).default(0.1),
  /** A block that lasted less than this doubles K for the next; more than twice this halves it (Leaf: 15 min). */
  targetMs: z.number().int().min(1).default(900_000),
}).strict();

export const ticketsConfigSchema = z.object({
  /** The database on every ticket server that holds one table per sequence. */
  database: identifier.default('tickets'),
  servers: z.array(ticketServerSchema).min(1),
  /** `auto_increment_increment` of every server; defaults to the number of servers. */
  increment: z.number().int().min(1).max(65535).optional(),
  sequences: z.array(sequenceSchema).min(1),
  /** Default mode of clients built from this config (the CLI uses classic unless --segment). */
  mode: z.enum(['classic', 'segment']).default('classic'),
  user: z.string().default('root'),
  password: z.string().optional(),
  /** Connections per server per client. */
  poolSize: z.number().int().min(1).max(1000).default(4),
  /** A server that does not connect or answer within these bounds is skipped and tried again later. */
  connectTimeoutMs: z.number().int().min(1).max(600_000).default(1000),
  queryTimeoutMs: z.number().int().min(1).max(600_000).default(1000),
  /** How long a failed server is left alone before one request probes it again. */
  retryAfterMs: z.number().int().min(1).max(3_600_000).default(1000),
  /** Largest `count` accepted by nextBatch / HTTP / CLI. */
  maxBatch: z.number().int().min(1).max(1_000_000).default(10_000),
  segment: segmentConfigSchema.default({ initialSize: 1000, minSize: 10, maxSize: 1_000_000, prefetchAt: 0.1, targetMs: 900_000 }),
}).strict();

export type TicketsConfigInput = z.input<typeof ticketsConfigSchema>;
export type TicketsConfig = z.output<typeof ticketsConfigSchema>;
export type SegmentConfig = z.output<typeof segmentConfigSchema>;

export interface ResolvedTicketServer {
  name: string;
  host: string;
  port: number;
  socket?: string;
  user: string;
  password?: string;
  offset: number;
}

export interface ResolvedSequence {
  name: string;
  table: string;
}

/** The config with every default filled and cross-checked: what the client and `tickets init` use. */
export interface ResolvedTickets extends Omit<TicketsConfig, 'servers' | 'sequences' | 'increment'> {
  increment: number;
  servers: ResolvedTicketServer[];
  sequences: ResolvedSequence[];
}

function invalid(message: string): never {
  throw new ShardKitError('INVALID_CONFIG', `invalid tickets config: ${message}`);
}

/**
 * Validates (if needed) and resolves a tickets config. Offsets must be distinct residues
 * 1..increment, or two servers would hand out the same IDs.
 */
export function resolveTickets(input: TicketsConfigInput | TicketsConfig | ResolvedTickets): ResolvedTickets {
  const parsed = ticketsConfigSchema.safeParse(input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    invalid(`${issue.path.join('.') || '(root)'}: ${issue.message}`);
  }
  const c = parsed.data;
  const increment = c.increment ?? c.servers.length;
  if (increment < c.servers.length) invalid(`increment ${increment} is smaller than the number of servers (${c.servers.length})`);
  const servers = c.servers.map((s, i): ResolvedTicketServer => ({
    name: s.name,
    host: s.host,
    port: s.port,
    ...(s.socket !== undefined ? { socket: s.socket } : {}),
    user: s.user ?? c.user,
    ...((s.password ?? c.password) !== undefined ? { password: (s.password ?? c.password)! } : {}),
    offset: s.offset ?? i + 1,
  }));
  const names = new Set<string>();
  const offsets = new Set<number>();
  for (const s of servers) {
    if (names.has(s.name)) invalid(`server ${s.name} is listed twice`);
    names.add(s.name);
    if (s.offset > increment) invalid(`server ${s.name} has offset ${s.offset} > increment ${increment}`);
    if (offsets.has(s.offset)) invalid(`offset ${s.offset} is used by two servers; each server needs its own residue`);
    offsets.add(s.offset);
  }
  const sequences = c.sequences.map((s) => (typeof s === 'string' ? { name: s, table: s } : { name: s.name, table: s.table ?? s.name }));
  const seqNames = new Set<string>();
  const tables = new Set<string>();
  for (const s of sequences) {
    if (seqNames.has(s.name)) invalid(`sequence ${s.name} is declared twice`);
    if (tables.has(s.table)) invalid(`table ${s.table} is used by two sequences`);
    seqNames.add(s.name);
    tables.add(s.table);
  }
  const seg = c.segment;
  if (seg.minSize > seg.maxSize) invalid(`segment.minSize ${seg.minSize} > segment.maxSize ${seg.maxSize}`);
  if (seg.initialSize < seg.minSize || seg.initialSize > seg.maxSize) invalid(`segment.initialSize ${seg.initialSize} is outside minSize..maxSize`);
  const { servers: _s, sequences: _q, increment: _i, ...rest } = c;
  return { ...rest, increment, servers, sequences };
}

/** The residue every ID of a server with this offset has: offset mod increment. */
export function residueOf(offset: number, increment: number): bigint {
  return BigInt(offset % increment);
}
