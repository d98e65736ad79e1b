import { ShardKitError } from '../errors.js';
import { SegmentAllocator } from './segment-allocator.js';
import type { LatencyHistogram } from '../util/latency-histogram.js';
import { ServerSelector } from './server-selector.js';
import { CLASSIC_PAIRS_PER_ROUND_TRIP, TicketServer } from './ticket-server.js';
import { resolveTickets, type ResolvedSequence, type ResolvedTickets, type SegmentConfig, type TicketsConfig, type TicketsConfigInput } from './tickets-config.js';

export type TicketMode = 'classic' | 'segment';

export interface TicketMetrics {
  issued: Array<{ sequence: string; ids: number }>;
  servers: Array<{ server: string; up: boolean; latency: LatencyHistogram; errors: number }>;
}

export interface TicketClientOptions {
  /** Overrides the config's `mode`. */
  mode?: TicketMode;
  /** Overrides parts of the config's `segment` settings (the CLI sets initialSize to its count). */
  segment?: Partial<SegmentConfig>;
  /** Segment mode: fetch the next block in the background (default true; the CLI turns it off). */
  prefetch?: boolean;
  /** For tests: the clock used for health retries and block sizing. */
  now?: () => number;
}

/**
 * `tickets.next(sequence)` / `tickets.nextBatch(sequence, n)`: Flickr ticket servers, in classic
 * mode (one REPLACE per ID, round robin over the servers) or segment mode (blocks of K IDs in
 * memory). Both modes may run against the same servers at once: they share one counter per
 * sequence and server.
 */
export class TicketClient {
  readonly mode: TicketMode;
  readonly config: ResolvedTickets;
  readonly servers: readonly TicketServer[];
  private readonly selector: ServerSelector<TicketServer>;
  private readonly sequenceTables = new Map<string, ResolvedSequence>();
  private readonly allocators = new Map<string, SegmentAllocator>();
  private readonly segment: SegmentConfig;
  private closed = false;
  /** IDs handed out per sequence since this client was made. */
  private readonly issued = new Map<string, number>();

  constructor(config: TicketsConfigInput | TicketsConfig | ResolvedTickets, options: TicketClientOptions = {}) {
    // Resolving is idempotent: a resolved config is also a valid input.
    this.config = resolveTickets(config);
    this.mode = options.mode ?? this.config.mode;
    this.segment = { ...this.config.segment, ...options.segment };
    const c = this.config;
    this.servers = c.servers.map((s) => new TicketServer(s, {
      database: c.database,
      increment: c.increment,
      poolSize: c.poolSize,
      connectTimeoutMs: c.connectTimeoutMs,
      queryTimeoutMs: c.queryTimeoutMs,
    }));
    this.selector = new ServerSelector(this.servers, { retryAfterMs: c.retryAfterMs, ...(options.now ? { now: options.now } : {}) });
    for (const s of c.sequences) this.sequenceTables.set(s.name, s);
    if (this.mode === 'segment') {
      for (const s of c.sequences) {
        this.allocators.set(s.name, new SegmentAllocator((count) => this.selector.run((server) => server.reserve(s.table, count)), this.segment, {
          ...(options.now ? { now: options.now } : {}),
          ...(options.prefetch !== undefined ? { prefetch: options.prefetch } : {}),
        }));
      }
    }
  }

  /** The configured sequence names. */
  sequences(): string[] {
    return [...this.sequenceTables.keys()];
  }

  /** Up/down per server, as this client last saw it. */
  serverStatus(): Array<{ name: string; up: boolean; lastError?: string }> {
    return this.selector.status();
  }

  next(sequence: string): Promise<bigint> {
    if (this.closed) return Promise.reject(closedError());
    const allocator = this.allocators.get(sequence);
    if (allocator !== undefined) return allocator.next().then((id) => this.count(sequence, id));
    const seq = this.sequenceTables.get(sequence);
    if (seq === undefined) return Promise.reject(unknownSequence(sequence));
    return this.selector.run((server) => server.classic(seq.table, 1)).then((ids) => this.count(sequence, ids[0]!));
  }

  private count<T extends bigint | bigint[]>(sequence: string, ids: T): T {
    this.issued.set(sequence, (this.issued.get(sequence) ?? 0) + (typeof ids === 'bigint' ? 1 : ids.length));
    return ids;
  }

  /** For /metrics: IDs issued per sequence, and per server its health, round-trip latency and failures. */
  metrics(): TicketMetrics {
    const status = new Map(this.selector.status().map((s) => [s.name, s.up]));
    return {
      issued: this.sequences().map((sequence) => ({ sequence, ids: this.issued.get(sequence) ?? 0 })),
      servers: this.servers.map((s) => ({ server: s.name, up: status.get(s.name) ?? false, latency: s.latency, errors: s.errors })),
    };
  }

  async nextBatch(sequence: string, count: number): Promise<bigint[]> {
    if (this.closed) throw closedError();
    const seq = this.sequenceTables.get(sequence);
    if (seq === undefined) throw unknownSequence(sequence);
    if (!Number.isSafeInteger(count) || count < 1 || count > this.config.maxBatch) {
      throw new ShardKitError('INVALID_ARGUMENT', `count must be an integer in 1..${this.config.maxBatch}, got ${String(count)}`);
    }
    const allocator = this.allocators.get(sequence);
    if (allocator !== undefined) return this.count(sequence, await allocator.take(count));
    // Chunks of REPLACE/SELECT pairs, each chunk its own round trip, spread round robin.
    const chunks: Promise<bigint[]>[] = [];
    for (let left = count; left > 0; left -= CLASSIC_PAIRS_PER_ROUND_TRIP) {
      const k = Math.min(left, CLASSIC_PAIRS_PER_ROUND_TRIP);
      chunks.push(this.selector.run((server) => server.classic(seq.table, k)));
    }
    return this.count(sequence, (await Promise.all(chunks)).flat());
  }

  /** Ends every connection. IDs reserved in memory by segment mode are skipped, never reissued. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const a of this.allocators.values()) a.close();
    await Promise.all(this.servers.map((s) => s.close()));
  }
}

export function createTicketClient(config: TicketsConfigInput | TicketsConfig | ResolvedTickets, options: TicketClientOptions = {}): TicketClient {
  return new TicketClient(config, options);
}

function unknownSequence(sequence: string): ShardKitError {
  const shown = sequence.length > 64 ? `${sequence.slice(0, 64)}…` : sequence;
  return new ShardKitError('UNKNOWN_SEQUENCE', `unknown sequence ${JSON.stringify(shown)}`);
}

function closedError(): ShardKitError {
  return new ShardKitError('CLOSED', 'the ticket client is closed');
}
