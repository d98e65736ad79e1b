import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, onRequestHookHandler } from 'fastify';
import { ShardKitError } from '../errors.js';
import { errorBody } from './schemas.js';

/** Routes under this prefix act on the service machine itself (compaction, backups, exports). */
export const ADMIN_PREFIX = '/v1/admin/';

/** The environment variable `serve` and the CLI's `--url` calls read the admin token from. */
export const ADMIN_TOKEN_ENV = 'SHARDKIT_ADMIN_TOKEN';

/**
 * Who may call the admin routes:
 * - `open`: anyone who reaches the service (library use, a service on loopback);
 * - `token`: requests with `Authorization: Bearer <token>`;
 * - `disabled`: nobody; `reason` says why and what to do (serve on a public address without a token).
 */
export type AdminAccess = { kind: 'open' } | { kind: 'token'; token: string } | { kind: 'disabled'; reason: string };

/** Shortest token accepted: a guessable admin token is no protection. */
export const MIN_ADMIN_TOKEN_LENGTH = 16;

export function checkAdminToken(token: string, where: string): string {
  const t = token.trim();
  if (t.length < MIN_ADMIN_TOKEN_LENGTH || /\s/.test(t)) {
    throw new ShardKitError('INVALID_CONFIG', `the admin token from ${where} must be at least ${MIN_ADMIN_TOKEN_LENGTH} characters without spaces (e.g. \`openssl rand -hex 32\`)`);
  }
  return t;
}

/**
 * Adds the access check to every admin route as it is registered (route plugins included), so a
 * new admin route cannot forget it. Other routes are untouched: the data API is for the
 * application's own network and has no per-request cost for this.
 */
export function installAdminAuth(app: FastifyInstance, access: AdminAccess): void {
  const check = accessCheck(access);
  app.addHook('onRoute', (route) => {
    if (!route.url.startsWith(ADMIN_PREFIX)) return;
    // Documented whatever this instance's access: docs/openapi.json describes every deployment.
    const schema = route.schema ?? {};
    route.schema = {
      ...schema,
      security: [{ [ADMIN_SECURITY_SCHEME]: [] }],
      response: { ...(schema.response as object | undefined), 401: errorBody, 403: errorBody },
    };
    if (check !== undefined) route.onRequest = route.onRequest === undefined ? check : [check, ...[route.onRequest].flat()];
  });
}

/** The OpenAPI security scheme of the admin routes (components.securitySchemes in app.ts). */
export const ADMIN_SECURITY_SCHEME = 'adminToken';

function accessCheck(access: AdminAccess): onRequestHookHandler | undefined {
  if (access.kind === 'open') return undefined;
  if (access.kind === 'disabled') return (_request, _reply, done) => done(new ShardKitError('FORBIDDEN', access.reason));
  // Digests of equal length, so the comparison takes the same time whatever the client sent.
  const want = digest(access.token);
  return (request, reply, done) => {
    const header = request.headers.authorization;
    const m = typeof header === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
    if (m === null || !timingSafeEqual(digest(m[1]!), want)) {
      void reply.header('www-authenticate', 'Bearer realm="shardkit-admin"');
      done(new ShardKitError('UNAUTHORIZED', `admin routes need the header Authorization: Bearer <token> with the service's admin token (${ADMIN_TOKEN_ENV})`));
      return;
    }
    done();
  };
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}
