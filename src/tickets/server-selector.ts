import { ShardKitError } from '../errors.js';

/** What the selector needs of a server: a name for error messages. */
export interface Named {
  readonly name: string;
}

interface Health {
  /** 0 while healthy; otherwise the time (ms) from which one request may probe it again. */
  retryAt: number;
  lastError?: string;
}

/**
 * Round robin over servers with health: a server that failed is skipped until `retryAfterMs`
 * has passed, then exactly one request probes it (others keep skipping it) and a success puts it
 * back in the rotation. Requests never wait for a down server beyond the caller's own timeouts.
 */
export class ServerSelector<S extends Named> {
  private cursor = 0;
  private readonly health: Health[];

  constructor(
    readonly servers: readonly S[],
    private readonly options: { retryAfterMs: number; now?: () => number; start?: number },
  ) {
    if (servers.length === 0) throw new ShardKitError('INVALID_CONFIG', 'at least one ticket server is needed');
    this.health = servers.map(() => ({ retryAt: 0 }));
    // Short-lived clients (one CLI call) would all hit the first server if every rotation started there.
    this.cursor = options.start ?? Math.floor(Math.random() * servers.length);
  }

  private now(): number {
    return this.options.now ? this.options.now() : Date.now();
  }

  /** Servers to try for one request, in order: due probes first, then the healthy ones round robin. */
  candidates(): S[] {
    const n = this.servers.length;
    const now = this.now();
    const healthy: S[] = [];
    const probes: S[] = [];
    for (let i = 0; i < n; i++) {
      const h = this.health[i]!;
      if (h.retryAt === 0) healthy.push(this.servers[i]!);
      else if (now >= h.retryAt) {
        // Claim the probe so that concurrent requests keep skipping this server meanwhile.
        h.retryAt = now + this.options.retryAfterMs;
        probes.push(this.servers[i]!);
      }
    }
    // Rotating over the healthy ones only keeps the load even while a server is out.
    const start = healthy.length > 0 ? this.cursor % healthy.length : 0;
    this.cursor = (this.cursor + 1) % 1_000_000_007;
    if (probes.length === 0 && healthy.length === 0) {
      // Everything is marked down: one last attempt on the server that failed longest ago, so that
      // a single slow answer from the last healthy server does not turn into seconds of 503s.
      let oldest = 0;
      for (let i = 1; i < n; i++) if (this.health[i]!.retryAt < this.health[oldest]!.retryAt) oldest = i;
      return [this.servers[oldest]!];
    }
    // A due probe goes first: that is how a restarted server rejoins while the others carry the load.
    return [...probes, ...healthy.slice(start), ...healthy.slice(0, start)];
  }

  markUp(server: S): void {
    const h = this.health[this.servers.indexOf(server)];
    if (h) {
      h.retryAt = 0;
      delete h.lastError;
    }
  }

  markDown(server: S, error: unknown): void {
    const h = this.health[this.servers.indexOf(server)];
    if (h) {
      h.retryAt = this.now() + this.options.retryAfterMs;
      h.lastError = describeError(error);
    }
  }

  isUp(server: S): boolean {
    return this.health[this.servers.indexOf(server)]?.retryAt === 0;
  }

  /** Per server: up or down with the last error; for status endpoints and logs. */
  status(): Array<{ name: string; up: boolean; lastError?: string }> {
    return this.servers.map((s, i) => ({ name: s.name, up: this.health[i]!.retryAt === 0, ...(this.health[i]!.lastError ? { lastError: this.health[i]!.lastError! } : {}) }));
  }

  /**
   * Runs `fn` on the first candidate that succeeds; each failure marks that server down and moves
   * on. When none is left: TICKET_SERVERS_UNAVAILABLE naming every server and why.
   */
  async run<T>(fn: (server: S) => Promise<T>): Promise<T> {
    const tried: string[] = [];
    for (const server of this.candidates()) {
      try {
        const result = await fn(server);
        this.markUp(server);
        return result;
      } catch (err) {
        if (err instanceof ShardKitError && err.status < 500) throw err;
        this.markDown(server, err);
        tried.push(`${server.name}: ${describeError(err)}`);
      }
    }
    const skipped = this.status().filter((s) => !s.up && !tried.some((t) => t.startsWith(`${s.name}:`)));
    const parts = [...tried, ...skipped.map((s) => `${s.name}: down (${s.lastError ?? 'failed earlier'}), retried later`)];
    throw new ShardKitError('TICKET_SERVERS_UNAVAILABLE', `no ticket server answered: ${parts.join('; ')}`);
  }
}

export function describeError(err: unknown): string {
  if (err instanceof ShardKitError) return err.message;
  const e = err as { code?: string; message?: string };
  const msg = (e?.message ?? String(err)).split('\n')[0]!;
  return e?.code && !msg.includes(e.code) ? `${e.code} ${msg}` : msg;
}
