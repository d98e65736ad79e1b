import Router from 'find-my-way';
import type { FastifyInstance, FastifyReply, FastifyRequest, preValidationHookHandler } from 'fastify';

type Method = Router.HTTPMethod;
import { ShardKitError } from '../errors.js';
import { errorBody } from './schemas.js';

/** Routes of the data API: every rule below holds on each of them, plugins' routes included. */
export const API_PREFIX = '/v1/';

const METHODS: readonly Method[] = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

/**
 * Rules of docs/http-api.md that hold on every route, installed as hooks at the root so the
 * routes of other modules (wide-column, tickets) get them without knowing:
 * - a query parameter the route does not declare is 400 INVALID_ARGUMENT (routes without a
 *   query schema get an empty one; declared ones get `additionalProperties: false`);
 * - malformed percent-encoding anywhere in the query string, parameter names included, is 400
 *   before any handler reads it (the query parser would keep `%ED%A0%80` as literal text);
 * - `application/merge-patch+json` is for PATCH only (415 elsewhere); a POST needs a content type;
 * - a method the path does not have is 405 METHOD_NOT_ALLOWED with `Allow`, not 404.
 * Returns the not-found handler's check for 405.
 */
const ANY_ROUTE = { 400: errorBody, 401: errorBody, 403: errorBody, 405: errorBody, 408: errorBody, 421: errorBody, 429: errorBody, 431: errorBody, 500: errorBody, 503: errorBody } as const;
const BODY_ROUTE = { 413: errorBody, 415: errorBody } as const;

export function installContractHooks(app: FastifyInstance, maxParamLength: number, options: { statusSchemas?: boolean } = {}): { methodNotAllowed: (request: FastifyRequest, reply: FastifyReply) => boolean } {
  // A copy of the route table, only to ask "which methods does this path have?" on a 404.
  const routes = Router({ maxParamLength });
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) {
      if (!routes.hasRoute(method as Method, route.url)) routes.on(method as Method, route.url, () => undefined);
    }
    if (!route.url.startsWith(API_PREFIX)) return;
    if ([route.method].flat().includes('POST')) route.preValidation = [...[route.preValidation ?? []].flat(), needsContentType];
    // Statuses any /v1/ route can answer whatever it does, so the OpenAPI document lists them:
    // bad query parameters, a missing or weak token (auth file), another method (405), a slow or
    // oversized request head, a foreign Host, the rate limit, an internal error, the concurrency
    // cap (docs/security.md); a route with a body also a too-large body and a wrong content type.
    // Not inside another app (shardkitRoutes): its own auth and limits answer in their own shape.
    const answered = route.schema ?? {};
    const withBody = [route.method].flat().some((m) => m === 'POST' || m === 'PUT' || m === 'PATCH');
    const schema = options.statusSchemas === false ? answered : { ...answered, response: { ...(answered.response as object | undefined), ...ANY_ROUTE, ...(withBody ? BODY_ROUTE : {}) } };
    route.schema = schema;
    const query = schema.querystring as { type?: string; additionalProperties?: unknown; properties?: object } | undefined;
    if (query === undefined) {
      route.schema = { ...schema, querystring: { type: 'object', properties: {}, additionalProperties: false } };
    } else if (query.additionalProperties === undefined) {
      route.schema = { ...schema, querystring: { ...query, additionalProperties: false } };
    }
    const integers = Object.entries(query?.properties ?? {}).filter(([, p]) => (p as { type?: unknown }).type === 'integer').map(([name]) => name);
    if (integers.length > 0) route.preValidation = [...[route.preValidation ?? []].flat(), decimalIntegers(integers)];
  });

  app.addHook('onRequest', (request, _reply, done) => {
    // RFC 9112 §3.2: an HTTP/1.1 request without Host is 400 (Node's own check answers with no body).
    if (request.raw.httpVersion === '1.1' && request.headers.host === undefined) {
      done(new ShardKitError('MALFORMED_REQUEST', 'an HTTP/1.1 request needs a Host header'));
      return;
    }
    const q = request.url.indexOf('?');
    if (q >= 0 && request.url.includes('%', q)) {
      for (const part of request.url.slice(q + 1).split('&')) {
        try {
          decodeURIComponent(part.replace(/\+/g, ' '));
        } catch {
          done(new ShardKitError('INVALID_ARGUMENT', `query parameter ${JSON.stringify(part.slice(0, 60))} is not valid percent-encoded UTF-8`));
          return;
        }
      }
    }
    if (request.method !== 'PATCH' && mediaType(request.headers['content-type']) === 'application/merge-patch+json') {
      done(new ShardKitError('UNSUPPORTED_MEDIA_TYPE', 'application/merge-patch+json is for PATCH only; send application/json'));
      return;
    }
    // Bodies are read as UTF-8 text as they come: a compressed or UTF-16 body was parsed as if it
    // were neither (RFC 9110 §8.4: a content coding the server cannot decode is 415).
    done(unreadableBody(request.headers['content-encoding'], request.headers['content-type']));
  });

  return {
    methodNotAllowed(request, reply) {
      const path = request.url.split('?')[0]!;
      const allowed = METHODS.filter((m) => routes.find(m, path) !== null);
      // A route of this very method that found nothing (a file the docs' static route lacks) is a 404.
      if (allowed.length === 0 || allowed.includes(request.method as (typeof METHODS)[number])) return false;
      void reply.code(405).header('allow', allowed.join(', ')).send({ error: { code: 'METHOD_NOT_ALLOWED', message: `${request.method} is not allowed on ${path}; allowed: ${allowed.join(', ')}` } });
      return true;
    },
  };
}

/**
 * A POST without a content type is what any web page may send cross-site without a CORS
 * preflight (fetch with no body): a page in the operator's browser ran compact on an open
 * loopback service this way (#34 finding 6). Routes that take no body take an empty JSON one.
 * After routing and authentication (401/403/405 first), before any handler. A hook of the POST
 * routes only, so that a GET runs no preValidation stage at all.
 */
const needsContentType: preValidationHookHandler = (request, _reply, done) => {
  if (request.method === 'POST' && request.headers['content-type'] === undefined) {
    done(new ShardKitError('UNSUPPORTED_MEDIA_TYPE', 'a POST needs Content-Type: application/json (with an empty body on routes that take none)'));
    return;
  }
  done();
};

/**
 * Integer query parameters are plain decimal: the validator's coercion reads its input as
 * JavaScript does (`+"1e1"`, `+"0x10"`, `+" 10"` are all numbers), so `?limit=0x10` meant 16. A
 * hook of the routes that declare an integer parameter, before the validator coerces it.
 */
function decimalIntegers(names: readonly string[]): preValidationHookHandler {
  return (request, _reply, done) => {
    const query = request.query as Record<string, unknown>;
    for (const name of names) {
      const value = query[name];
      if (typeof value === 'string' && !/^-?[0-9]{1,16}$/.test(value)) {
        done(new ShardKitError('INVALID_ARGUMENT', `query parameter ${name} must be a decimal integer, not ${JSON.stringify(value.slice(0, 40))}`));
        return;
      }
    }
    done();
  };
}

/** A body this service would misread: any content coding but identity, a charset but UTF-8. */
function unreadableBody(encoding: string | undefined, type: string | undefined): ShardKitError | undefined {
  const coding = encoding?.trim().toLowerCase();
  if (coding !== undefined && coding !== '' && coding !== 'identity') {
    return new ShardKitError('UNSUPPORTED_MEDIA_TYPE', `Content-Encoding ${JSON.stringify(encoding!.slice(0, 40))} is not supported: send the body uncompressed`);
  }
  const charset = /;\s*charset\s*=\s*"?([^";\s]*)/i.exec(type ?? '')?.[1]?.toLowerCase();
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
    return new ShardKitError('UNSUPPORTED_MEDIA_TYPE', `charset ${JSON.stringify(charset.slice(0, 40))} is not supported: send UTF-8`);
  }
  return undefined;
}

function mediaType(header: string | undefined): string | undefined {
  return header?.split(';')[0]!.trim().toLowerCase();
}
