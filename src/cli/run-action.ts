import { statSync } from 'node:fs';
import { ShardKitError, type ErrorCode } from '../errors.js';
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
  err = fromNodeError(err) ?? err;
  if (err instanceof ShardKitError) {
    process.stderr.write(`shardkit: ${err.code}: ${err.message}\n`);
    process.exit(err.status < 500 ? EXIT_BAD_INPUT : EXIT_FAILURE);
  }
  const message = err instanceof Error ? err.message : String(err);
  process.stderr.write(`shardkit: error: ${message.split('\n')[0]}\n`);
  process.exit(EXIT_FAILURE);
}

type NodeError = NodeJS.ErrnoException & { address?: string; port?: number; hostname?: string; input?: string; reason?: string };

/** What a path error means to whoever typed the path; EEXIST depends on the syscall (see below). */
const PATH_ERRORS: Partial<Record<string, [ErrorCode, string]>> = {
  ENOENT: ['NOT_FOUND', 'no such file or directory'],
  ENOTDIR: ['INVALID_ARGUMENT', 'a part of the path is not a directory'],
  EISDIR: ['INVALID_ARGUMENT', 'it is a directory'],
  EEXIST: ['ALREADY_EXISTS', 'it already exists'],
  EACCES: ['INVALID_ARGUMENT', 'permission denied'],
  EPERM: ['INVALID_ARGUMENT', 'operation not permitted'],
  EROFS: ['INVALID_ARGUMENT', 'read-only file system'],
  ENAMETOOLONG: ['INVALID_ARGUMENT', 'the name is too long'],
  ELOOP: ['INVALID_ARGUMENT', 'too many levels of symbolic links'],
};

/**
 * Node's own errors that reach the CLI untyped are nearly always about something the command line
 * named: a path (--data, --out, --file), a port or address to listen on, a host name, a URL, a PEM
 * file. Typing them here, where every error is reported, makes them read and exit like any other
 * bad input instead of a raw `EEXIST: ..., mkdir` with exit 1. Anything else (ENOSPC, a child
 * process that would not start, ...) stays an unexpected failure.
 */
export function fromNodeError(err: unknown): ShardKitError | undefined {
  if (!(err instanceof Error) || err instanceof ShardKitError) return undefined;
  const e = err as NodeError;
  const code = typeof e.code === 'string' ? e.code : '';
  if (e.syscall === 'listen') {
    const where = e.port !== undefined ? `${e.address?.includes(':') ? `[${e.address}]` : e.address}:${e.port}` : e.address ?? '';
    if (code === 'EADDRINUSE') return new ShardKitError('ALREADY_EXISTS', `cannot listen on ${where}: the port is already in use (choose another port, or stop what listens there)`, { cause: err });
    if (code === 'EADDRNOTAVAIL') return new ShardKitError('INVALID_ARGUMENT', `cannot listen on ${where}: not an address of this machine`, { cause: err });
    if (code === 'EACCES') return new ShardKitError('INVALID_ARGUMENT', `cannot listen on ${where}: permission denied (ports below 1024 need privileges)`, { cause: err });
  }
  // A server of the fleet that does not answer (stopped, killed, its socket gone): the operation
  // cannot go on, as when the topology or a shard is unavailable; retry once it is back.
  if (e.syscall === 'connect' && ['ECONNREFUSED', 'ENOENT', 'ETIMEDOUT', 'EHOSTUNREACH', 'ECONNRESET'].includes(code)) {
    const where = e.port !== undefined ? `${e.address}:${e.port}` : e.address ?? '?';
    return new ShardKitError('SHARD_UNAVAILABLE', `cannot reach the server at ${where} (${code}): is it running?`, { cause: err });
  }
  if (code === 'ENOTFOUND' && e.hostname !== undefined) return new ShardKitError('INVALID_ARGUMENT', `cannot resolve the host name ${e.hostname}: no such host`, { cause: err });
  if (code === 'ERR_INVALID_URL') return new ShardKitError('INVALID_ARGUMENT', `not a valid URL: ${JSON.stringify(String(e.input ?? '').slice(0, 80))}`, { cause: err });
  // OpenSSL refused a certificate or key: only TLS material the command was given gets parsed.
  if (code.startsWith('ERR_OSSL_')) return new ShardKitError('INVALID_ARGUMENT', `a TLS certificate or key cannot be used: ${e.reason ?? e.message}`, { cause: err });
  const known = PATH_ERRORS[code];
  if (known === undefined || typeof e.path !== 'string' || e.syscall === undefined || e.syscall.startsWith('spawn')) return undefined;
  const verb = e.syscall === 'mkdir' ? 'create the directory' : e.syscall;
  // mkdir -p fails with EEXIST only when the path is a file: that is a wrong path, not a clash.
  if (code === 'EEXIST' && e.syscall === 'mkdir' && !isDirectory(e.path)) return new ShardKitError('INVALID_ARGUMENT', `cannot ${verb} ${e.path}: it exists and is not a directory`, { cause: err });
  return new ShardKitError(known[0], `cannot ${verb} ${e.path}: ${known[1]}`, { cause: err });
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
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

/** Parses an option that takes one word of a fixed list, refusing any other with INVALID_ARGUMENT. */
export function choiceOption<T extends string>(name: string, choices: readonly T[]): (value: string) => T {
  return (value: string) => {
    if (!(choices as readonly string[]).includes(value)) throw new ShardKitError('INVALID_ARGUMENT', `${name} must be one of ${choices.join(', ')}, got ${JSON.stringify(value.slice(0, 40))}`);
    return value as T;
  };
}

/**
 * Parses the URL of a service: an http(s) URL, refused when the options are read rather than
 * later, as a service that cannot be reached (which would exit 1 and send the user looking for
 * a server that is not the problem).
 */
export function urlOption(name: string): (value: string) => string {
  return (value: string) => {
    let url: URL | undefined;
    try {
      url = new URL(value);
    } catch {
      // reported below, with the protocol check
    }
    if (url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
      throw new ShardKitError('INVALID_ARGUMENT', `${name} must be an http:// or https:// URL such as http://127.0.0.1:7070, got ${JSON.stringify(value.slice(0, 80))}`);
    }
    return value;
  };
}
