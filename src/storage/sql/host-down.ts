/**
 * The "host down" window every server pool keeps: after a failure that says the server is
 * unreachable (refused, reset, shut down, connect timeout; not a slow statement) calls fail at
 * once for min(1 s, connectTimeoutMs), so a dead master costs callers nothing; then the next call
 * tries again and the pool recovers by itself when the server is back.
 */
export class HostDown {
  private downUntil = 0;
  private lastError: unknown;

  constructor(
    private readonly isHostDownError: (err: unknown) => boolean,
    connectTimeoutMs: number,
    private readonly windowMs = Math.min(1000, connectTimeoutMs),
  ) {}

  /** Why the host is considered down, or undefined when it is not. */
  reason(): unknown {
    return Date.now() < this.downUntil ? this.lastError : undefined;
  }

  /** Records `err` when it says the host is down; other errors leave the host up. */
  mark(err: unknown): void {
    if (!this.isHostDownError(err)) return;
    this.lastError = err;
    this.downUntil = Date.now() + this.windowMs;
  }

  /** The error a call gets while the host is down, with the driver-level `code` its error mapping knows. */
  refusal(code: string): Error | undefined {
    const reason = this.reason();
    if (reason === undefined) return undefined;
    return codedError(code, `host down since a moment ago (${(reason as Error).message ?? String(reason)})`);
  }
}

export function codedError(code: string, message: string): Error {
  const err = new Error(message) as Error & { code: string };
  err.code = code;
  return err;
}
