import Fastify, { type FastifyInstance, type FastifyReply, type FastifyServerOptions, type preHandlerHookHandler } from 'fastify';
import { VERSION } from '../util/version.js';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { bodyStrictValidator } from './body-validator.js';
import type { ShardKit } from '../kit/shard-kit.js';
import { ADMIN_SECURITY_SCHEME, ADMIN_TOKEN_ENV, installAdminAuth, type AdminAccess } from './admin-auth.js';
import type { TokenSet } from './auth-tokens.js';
import { installContractHooks } from './contract-hooks.js';
import { installLimits, type LimitOptions } from './limits.js';
import { DEFAULT_BODY_TIMEOUT_MS, installBodyTimeout } from './body-timeout.js';
import { installHostCheck } from './host-check.js';
import { childLoggerFactory, installAnswerHeaders, requestId } from './request-ids.js';
import { hardenedTls, HSTS } from './tls.js';
import { installOperationIds, shapeDocument } from './openapi-shape.js';
import { installScopeAuth, TOKEN_SECURITY_SCHEME } from './scope-auth.js';
import { clientErrorHandler, expectationFailed, installErrorHandler, MAX_HEADER_BYTES, toErrorResponse } from './error-handler.js';
import { installMetrics } from './metrics.js';
import { installTracing } from './trace-context.js';
import type { KitTracer } from '../kit/operation-events.js';
import { DEFAULT_BODY_LIMIT, MAX_PARAM_LENGTH, installJsonParsers, registerDataRoutes } from './data-routes.js';
import { dashboardRoutes } from './routes/dashboard-routes.js';

export { bodyStrictValidator };

/** A route plugin of another module (wide-column, tickets, ...), registered after ours. */
export type RoutePlugin = (app: FastifyInstance) => Promise<void> | void;

export interface BuildAppOptions {
  kit: ShardKit;
  /** Fastify's `logger` option (false by default); or pass a pino instance as `loggerInstance`. */
  logger?: FastifyServerOptions['logger'];
  loggerInstance?: FastifyServerOptions['loggerInstance'];
  plugins?: RoutePlugin[];
  /** Largest request body in bytes; larger ones get 413 PAYLOAD_TOO_LARGE. Default 1 MiB. */
  bodyLimit?: number;
  /** Serve /metrics (default true). */
  metrics?: boolean;
  /** Serve the web dashboard at /dashboard/, with / redirecting there (default true). */
  dashboard?: boolean;
  /** Who may call the /v1/admin/ routes (default: open; `serve` decides from its host and token). */
  admin?: AdminAccess;
  /**
   * Bearer tokens with scopes for every /v1/ route (serve --auth-file). When set, admin routes
   * need an admin-scope token and `admin` is not consulted.
   */
  tokens?: TokenSet;
  /** Per-client rate limit and concurrency cap (off by default). */
  limits?: LimitOptions;
  /** Node https server options (serve --tls-cert/--tls-key/--tls-client-ca); our cipher list unless they name one (tls.ts). */
  https?: import('node:https').ServerOptions;
  /**
   * Without tokens, answer only these Host names besides loopback ones (DNS rebinding; `serve`
   * passes the address it listens on, and leaves this out on a wildcard address). Off when
   * undefined, or when `tokens` is set.
   */
  hosts?: readonly string[];
  /** Most milliseconds a request body may take after the headers (408 past it). Default 30 s. */
  bodyTimeoutMs?: number;
  /**
   * OpenTelemetry tracer of the request spans (default: the kit's `tracer`): an incoming W3C
   * `traceparent` is their parent, and the kit's storage spans their children (trace-context.ts).
   */
  tracer?: KitTracer;
}

export { DEFAULT_BODY_LIMIT };


declare module 'fastify' {
  interface FastifyInstance {
    kit: ShardKit;
    /** The registry /metrics serves, for route plugins' own metrics; null with `metrics: false`. */
    metricsRegistry: import('prom-client').Registry | null;
  }
  interface FastifyContextConfig {
    /** The route takes an empty JSON body as no body (a mapping PUT's body is optional). */
    optionalBody?: boolean;
  }
}

/**
 * The HTTP service: objects, mappings, lookups, topology, health, metrics and docs, plus any
 * route plugins given. Every route declares schemas for what it accepts and returns; every
 * error leaves as `{"error":{"code","message"}}` (error-handler.ts).
 */
export async function buildApp(options: BuildAppOptions): Promise<FastifyInstance> {
  const { kit } = options;
  const bodyLimit = options.bodyLimit ?? DEFAULT_BODY_LIMIT;
  const app = Fastify({
    ...(options.https !== undefined ? { https: hardenedTls(options.https) } : {}),
    genReqId: requestId,
    // Only with a real logger: fastify calls a custom factory, and checks the logger it returns,
    // on every request even when logging is off (the null logger's child is itself).
    ...(options.logger !== undefined && options.logger !== false || options.loggerInstance !== undefined ? { childLoggerFactory } : {}),
    ...(options.loggerInstance !== undefined ? { loggerInstance: options.loggerInstance } : { logger: options.logger ?? false }),
    bodyLimit,
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    // Host is checked in a hook (contract-hooks.ts), so that its absence gets our error body too.
    http: { maxHeaderSize: MAX_HEADER_BYTES, requireHostHeader: false },
    // Requests the HTTP parser refuses (malformed, headers too large) get our error body too.
    clientErrorHandler,
    // Malformed URLs and headers are answered before routing; keep the same error body.
    frameworkErrors: (error, _request, reply) => {
      const { status, body } = toErrorResponse(error);
      void (reply as unknown as FastifyReply).code(status).type('application/json; charset=utf-8').send(body);
    },
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    ajv: { customOptions: { removeAdditional: false } },
    // Fastify's Ajv coerces types, which query strings and path params need ("?limit=50") but
    // bodies must not get: `{"shard":"1"}` or `{"value":5}` are wrong JSON, not a number or a
    // string. Bodies get a validator that does not coerce; every other part keeps coercion.
    schemaController: { compilersFactory: { buildValidator: bodyStrictValidator as unknown as NonNullable<NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>['buildValidator']> } },
    return503OnClosing: true,
  }) as unknown as FastifyInstance;
  app.server.on('checkExpectation', expectationFailed);
  app.decorate('kit', kit);
  // No page may frame an answer of this service (clickjacking of /docs and the dashboard), nor a
  // browser guess another type than the one sent; over HTTPS, browsers come back only over HTTPS.
  installAnswerHeaders(app, {
    'x-frame-options': 'DENY',
    'x-content-type-options': 'nosniff',
    ...(options.https !== undefined ? { 'strict-transport-security': HSTS } : {}),
  });
  const tracer = options.tracer ?? kit.tracer;
  if (tracer !== undefined) installTracing(app, tracer);
  // First of the refusing hooks: a request refused before its body came still has a body deadline.
  installBodyTimeout(app, options.bodyTimeoutMs ?? DEFAULT_BODY_TIMEOUT_MS);
  if (options.hosts !== undefined && options.tokens === undefined) installHostCheck(app, options.hosts);
  // JSON only, on every route (ours and the plugins'): text/plain would reach a schema as a
  // string, and it is a body any web page may send cross-site without a CORS preflight, so a page
  // in the operator's browser could otherwise POST to a loopback service's open admin routes.
  app.removeContentTypeParser('text/plain');
  // Before any route (swagger's included): metrics hook each route as it is added.
  const metrics = options.metrics === false ? undefined : installMetrics(app, kit);
  app.decorate('metricsRegistry', metrics?.registry ?? null);
  const contract = installContractHooks(app, MAX_PARAM_LENGTH);
  installOperationIds(app);
  // With tokens, their scopes guard the admin routes too (an admin-scope token).
  installAdminAuth(app, options.tokens !== undefined ? { kind: 'open' } : (options.admin ?? { kind: 'open' }));
  const unmatchedAuth = installScopeAuth(app, options.tokens);
  const unmatchedLimit = await installLimits(app, options.limits ?? {});
  // A path no route has is counted, authenticated and rate limited like any other: without a
  // token, 401 before 404/405 (which tell what exists); a flood of them hits the limit too.
  const unmatched = [metrics?.countUnmatched, unmatchedAuth, unmatchedLimit].filter((h) => h !== undefined) as preHandlerHookHandler[];
  installErrorHandler(app, { notFoundPreHandler: unmatched, methodNotAllowed: contract.methodNotAllowed });

  await app.register(swagger, {
    transformObject: (document) => shapeDocument((document as { openapiObject: Parameters<typeof shapeDocument>[0] }).openapiObject) as never,
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'shardkit',
        version: VERSION,
        description: 'Sharded objects, mappings and lookups (the Pinterest design). IDs are 64-bit integers sent as decimal strings. Errors are `{"error":{"code","message"}}` with a stable code.',
      },
      // Every tag a route of ours or of a module's plugin uses, so each group has its description
      // even in a document without those plugins (docs/openapi.json).
      tags: [
        { name: 'objects', description: 'JSON objects found by their 64-bit ID' },
        { name: 'mappings', description: 'Ordered one-directional lists from an object to objects' },
        { name: 'lookups', description: 'Arbitrary keys to object IDs on the mod-shard fleet' },
        { name: 'system', description: 'Topology, health and metrics' },
        { name: 'admin', description: 'Operator views of the shard fleet: requests and objects per shard (the dashboard\'s heat map). Admin routes take `Authorization: Bearer <token>` when the service has an admin token (docs/operations.md).' },
        { name: 'tickets', description: 'Unique 64-bit IDs from named sequences on Flickr-style ticket servers (served when the config has a tickets section; docs/tickets.md)' },
        { name: 'widecolumn', description: 'Datasets, rows and timestamped cells of the RocksDB wide-column store (docs/widecolumn.md)' },
        { name: 'widecolumn-admin', description: 'Compaction, backups and Parquet exports of the wide-column store (docs/widecolumn.md). Admin routes take `Authorization: Bearer <token>` when the service has an admin token (docs/operations.md).' },
      ],
      components: {
        securitySchemes: {
          [ADMIN_SECURITY_SCHEME]: { type: 'http', scheme: 'bearer', description: `The service's admin token (${ADMIN_TOKEN_ENV} or serve --admin-token-file). Without one, admin routes are open on a loopback address and answer 403 FORBIDDEN on any other.` },
          [TOKEN_SECURITY_SCHEME]: { type: 'http', scheme: 'bearer', description: 'A token of the service\'s auth file (serve --auth-file or SHARDKIT_AUTH_FILE; made by `shardkit auth token`), with a scope: read (GET and batch reads), write (every other data route, includes read), admin (/v1/admin/, includes write). Without an auth file the data API is open (and serve listens on loopback by default). 401 UNAUTHORIZED without a known token, 403 FORBIDDEN with too weak a scope (docs/security.md).' },
        },
      },
    },
  });
  // staticCSP: hashes of the page's own inline code; no other origin may frame it.
  await app.register(swaggerUi, { routePrefix: '/docs', staticCSP: true, transformStaticCSP: noFraming });
  // Every route's JSON bodies (the modules' plugins' too) parse with the data API's parsers.
  installJsonParsers(app, bodyLimit);

  await app.register(async (api) => registerDataRoutes(api, kit, { bodyLimit, ...(metrics !== undefined ? { registry: metrics.registry } : {}) }));
  if (options.dashboard !== false) await app.register(dashboardRoutes());
  for (const plugin of options.plugins ?? []) {
    await app.register(async (child) => {
      await plugin(child);
    });
  }
  await app.ready();
  return app;
}

/**
 * swagger-ui's policy with its `frame-ancestors 'self'` replaced by 'none': a second
 * frame-ancestors directive appended after it is ignored by browsers (the first one counts).
 */
export function noFraming(header: string): string {
  const directives = header.split(';').map((d) => d.trim()).filter((d) => d !== '' && !/^frame-ancestors\b/i.test(d));
  return [...directives, "frame-ancestors 'none'"].join('; ');
}
