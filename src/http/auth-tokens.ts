import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { ShardKitError } from '../errors.js';

/** What a token may do: each scope includes the ones before it. */
export const SCOPES = ['read', 'write', 'admin'] as const;
export type Scope = (typeof SCOPES)[number];

/** The environment variable `serve` reads the token file's path from (as --auth-file). */
export const AUTH_FILE_ENV = 'SHARDKIT_AUTH_FILE';

/**
 * A token file line: `sha256:<64 hex digits> <scope>`, then optional words (a label); `#` starts
 * a comment. Tokens are 32 random bytes, so a fast hash is enough: nobody can guess a preimage
 * of SHA-256 for a 256-bit secret, and a slow password hash would cost every request its time.
 */
const LINE = /^sha256:([0-9a-f]{64})\s+(read|write|admin)(?:\s+.*)?$/;

export interface TokenEntry {
  digest: Buffer;
  scope: Scope;
}

export function hashToken(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

/** Parses a token file's text; any malformed line is INVALID_CONFIG naming it (nothing half-loaded). */
export function parseTokenFile(text: string, where: string): TokenEntry[] {
  const out: TokenEntry[] = [];
  text.split('\n').forEach((raw, i) => {
    const line = raw.replace(/#.*$/, '').trim();
    if (line === '') return;
    const m = LINE.exec(line);
    if (m === null) throw new ShardKitError('INVALID_CONFIG', `${where} line ${i + 1} is not "sha256:<64 hex digits> <read|write|admin>" (make tokens with: shardkit auth token --scope <scope> --file ${where})`);
    out.push({ digest: Buffer.from(m[1]!, 'hex'), scope: m[2] as Scope });
  });
  return out;
}

export function readTokenFile(path: string): TokenEntry[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ShardKitError('INVALID_CONFIG', `cannot read the auth file ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  return parseTokenFile(text, path);
}

/**
 * A new token of `scope`: appends its hash and scope to `file` (created with mode 0600 if needed)
 * and returns the token, which exists nowhere else: the caller prints it once.
 */
export function createToken(file: string, scope: Scope, label?: string): string {
  if (!SCOPES.includes(scope)) throw new ShardKitError('INVALID_ARGUMENT', `scope must be one of ${SCOPES.join(', ')}`);
  if (label !== undefined && !/^[\w.@-]{1,64}$/.test(label)) throw new ShardKitError('INVALID_ARGUMENT', 'label must be 1..64 letters, digits or . @ - _');
  if (existsSync(file)) readTokenFile(file); // refuse to append to a file serve could not load
  const token = `sk_${randomBytes(32).toString('base64url')}`;
  const prefix = existsSync(file) && !readFileSync(file, 'utf8').endsWith('\n') && readFileSync(file, 'utf8') !== '' ? '\n' : '';
  appendFileSync(file, `${prefix}sha256:${hashToken(token).toString('hex')} ${scope}${label !== undefined ? ` ${label}` : ''}\n`, { mode: 0o600 });
  return token;
}

/**
 * The tokens a service accepts: the auth file's (reloadable) plus the admin token of
 * --admin-token-file / SHARDKIT_ADMIN_TOKEN as an admin-scope one.
 */
export class TokenSet {
  private entries: TokenEntry[];

  constructor(private readonly file: string | undefined, private readonly extra: TokenEntry[] = []) {
    this.entries = file === undefined ? [] : readTokenFile(file);
  }

  /** Re-reads the file (SIGHUP). A file that no longer parses keeps the old tokens and throws. */
  reload(): number {
    if (this.file !== undefined) this.entries = readTokenFile(this.file);
    return this.entries.length;
  }

  get size(): number {
    return this.entries.length + this.extra.length;
  }

  /**
   * The scope of `token`, or undefined. Every entry is compared, with timingSafeEqual on digests
   * of equal length, so the time taken says nothing about which bytes or which entry matched.
   */
  scopeOf(token: string): Scope | undefined {
    const digest = hashToken(token);
    let best = -1;
    for (const e of [...this.entries, ...this.extra]) {
      if (timingSafeEqual(digest, e.digest)) best = Math.max(best, SCOPES.indexOf(e.scope));
    }
    return best < 0 ? undefined : SCOPES[best];
  }
}

export function allows(have: Scope, need: Scope): boolean {
  return SCOPES.indexOf(have) >= SCOPES.indexOf(need);
}
