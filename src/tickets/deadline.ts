/** A timeout raised by `withDeadline`; the server that caused it is treated as down. */
export class DeadlineError extends Error {
  readonly code = 'TIMEOUT';
  constructor(what: string, ms: number) {
    super(`${what} did not finish within ${ms} ms`);
    this.name = 'DeadlineError';
  }
}

/**
 * Rejects after `ms` unless `promise` settled first. `onTimeout` cleans up what is stuck (e.g.
 * destroys the connection); `onLate` receives a value that arrives after the deadline so that
 * nothing leaks (e.g. a pooled connection handed out too late is released).
 */
export function withDeadline<T>(promise: Promise<T>, ms: number, what: string, hooks: { onTimeout?: () => void; onLate?: (value: T) => void } = {}): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        hooks.onTimeout?.();
      } finally {
        reject(new DeadlineError(what, ms));
      }
    }, ms);
    timer.unref();
    promise.then(
      (value) => {
        if (timedOut) hooks.onLate?.(value);
        else {
          clearTimeout(timer);
          resolve(value);
        }
      },
      (err: unknown) => {
        if (!timedOut) {
          clearTimeout(timer);
          reject(err);
        }
      },
    );
  });
}
