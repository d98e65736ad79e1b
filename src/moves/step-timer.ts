/** How long each step of a move took (the engines' `onStep` option; the move benches print them). */
export type OnStep = (step: string, ms: number) => void;

/** Runs `fn`, telling `onStep` how long it took, failed or not. */
export async function timedStep<T>(onStep: OnStep | undefined, name: string, fn: () => Promise<T>): Promise<T> {
  const t0 = performance.now();
  try {
    return await fn();
  } finally {
    onStep?.(name, performance.now() - t0);
  }
}
