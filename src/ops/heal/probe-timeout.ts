/**
 * Rejects after `ms`: a stopped (SIGSTOP) server accepts the connection and never answers. A value
 * that arrives after the timeout goes to `onLate` (a connection is closed there, not leaked).
 */
export function within<T>(ms: number, what: string, p: Promise<T>, onLate?: (value: T) => void): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, fail) => {
    timer = setTimeout(() => fail(new Error(`${what}: no answer within ${ms} ms`)), ms);
  });
  p.then((v) => {
    if (timer === undefined) onLate?.(v);
  }, () => {});
  return Promise.race([p, timeout]).finally(() => {
    clearTimeout(timer);
    timer = undefined;
  });
}
