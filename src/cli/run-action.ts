import { ShardKitError } from '../errors.js';
import { isMissingPackage, missingDependency } from '../util/optional-dependency.js';

/** Exit code for bad input (usage errors, invalid IDs, bad config); 1 for operational failures. */
export const EXIT_BAD_INPUT = 2;
export const EXIT_FAILURE = 1;

/**
 * Wraps a command action: a ShardKitError becomes one line on stderr (no stack trace) and
 * exit code 2 for 4xx-class errors, 1 for the rest.
 */
export function action<A extends unknown[]>(fn: (...args: A) => Promise<void> | void): (...args: A) => Promise<void> {
  return async (...args: A) => {
    try {
      await fn(...args);
    } catch (err) {
      fail(err);
    }
  };
}

export function fail(err: unknown): never {
  // A command whose modules import an optional peer dependency statically (the moves, the
  // server admin) fails to load without it: name the package, as the backends do.
  const missing = /Cannot find (?:package|module) '([^./][^']*)'/.exec(err instanceof Error ? err.message : '')?.[1];
  if (missing !== undefined && isMissingPackage(err, missing)) err = missingDependency(missing, 'this command', err);
  if (err instanceof ShardKitError) {
    process.stderr.write(`shardkit: ${err.code}: ${err.message}\n`);
    process.exit(err.status < 500 ? EXIT_BAD_INPUT : EXIT_FAILURE);
  }
  const message = err instanceof Error ? err.message : String(err);
  process.stderr.write(`shardkit: error: ${message.split('\n')[0]}\n`);
  process.exit(EXIT_FAILURE);
}

/** Parses an integer option, refusing anything else with INVALID_ARGUMENT. */
export function intOption(name: string, min = 0, max = Number.MAX_SAFE_INTEGER): (value: string) => number {
  return (value: string) => {
    if (!/^-?[0-9]+$/.test(value)) throw new ShardKitError('INVALID_ARGUMENT', `${name} must be an integer, got ${JSON.stringify(value.slice(0, 40))}`);
    const n = Number(value);
    if (!Number.isSafeInteger(n) || n < min || n > max) throw new ShardKitError('INVALID_ARGUMENT', `${name} must be an integer in ${min}..${max}, got ${value}`);
    return n;
  };
}
