import type { FastifyInstance, onRequestHookHandler, preHandlerHookHandler } from 'fastify';
import { ShardKitError } from '../errors.js';
import { ADMIN_PREFIX } from './admin-auth.js';
import { allows, type Scope, type TokenSet } from './auth-tokens.js';
import { API_PREFIX } from './contract-hooks.js';

/** The OpenAPI security scheme of the data API (components.securitySchemes in app.ts). */
export const TOKEN_SECURITY_SCHEME = 'bearerToken';

/**
 * The scope a route needs: admin under /v1/admin/, read for GET/HEAD and the batch read (a POST
 * that changes nothing), write for everything else.
 */
export function scopeFor(method: string, url: string): Scope {
  if (url.startsWith(ADMIN_PREFIX)) return 'admin';
  if (method === 'GET' || method === 'HEAD' || url.endsWith('::batchGet')) return 'read';
  return 'write';
}

/**
 * With a token set, every /v1/ route (plugins' included, added after this) checks
 * `Authorization: Bearer <token>`: 401 without a known token, 403 when its scope is too weak.
 * /healthz, /metrics, the dashboard's files and the docs stay open. Without one, routes are
 * untouched but still documented with the scheme (docs/openapi.json describes every deployment).
 * Returns the check of paths no route has (undefined without tokens).
 */
export function installScopeAuth(app: FastifyInstance, tokens: TokenSet | undefined): preHandlerHookHandler | undefined {
  app.addHook('onRoute', (route) => {
    if (!route.url.startsWith(API_PREFIX)) return;
    // A route of several methods needs the strongest scope any of them needs.
    const need = [route.method].flat().map((m) => scopeFor(String(m), route.url)).reduce((a, b) => (allows(a, b) ? a : b));
    const schema = route.schema ?? {};
    const security = [...((schema.security as Array<Record<string, string[]>> | undefined) ?? []), { [TOKEN_SECURITY_SCHEME]: [] }];
    route.schema = {
      ...schema,
      security,
      description: `${schema.description ?? ''}${schema.description ? ' ' : ''}Needs a token of scope \`${need}\` when the service has an auth file.`.trim(),
    };
    if (tokens === undefined) return;
    const check = checker(tokens, need);
    route.onRequest = route.onRequest === undefined ? check : [check, ...[route.onRequest].flat()];
  });
  if (tokens === undefined) return undefined;
  // For paths no route has (the not-found handler's preHandler): a /v1/ path needs a known
  // token, of any scope, before it learns whether the path exists.
  const anyToken = checker(tokens, 'read');
  return (request, reply, done) => {
    if (!request.url.startsWith(API_PREFIX)) return done();
    anyToken.call(app, request, reply, done as never);
  };
}

function checker(tokens: TokenSet, need: Scope): onRequestHookHandler {
  return (request, reply, done) => {
    const header = request.headers.authorization;
    const m = typeof header === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
    const scope = m === null ? undefined : tokens.scopeOf(m[1]!);
    if (scope === undefined) {
      void reply.header('www-authenticate', 'Bearer realm="shardkit"');
      done(new ShardKitError('UNAUTHORIZED', m === null ? 'this service needs the header Authorization: Bearer <token> (docs/security.md)' : 'the bearer token is not one this service knows'));
      return;
    }
    if (!allows(scope, need)) {
      void reply.header('www-authenticate', `Bearer realm="shardkit", error="insufficient_scope", scope="${need}"`);
      done(new ShardKitError('FORBIDDEN', `this route needs a token of scope ${need}; this one has ${scope}`));
      return;
    }
    done();
  };
}
