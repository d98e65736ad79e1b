import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { FastifyInstance, FastifyRequest, FastifyServerOptions } from 'fastify';

/** The header a request id arrives in and is echoed back in. */
export const REQUEST_ID_HEADER = 'x-request-id';

/** What an incoming id may look like: printable, short, nothing a log line or a header could choke on. */
const SANE_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/;

/**
 * The caller's `X-Request-Id` when it is sane (a proxy's or a client's, so one id follows a
 * request across services), a random UUID otherwise. It is the `reqId` of every log line of the
 * request and goes back in the answer's `X-Request-Id` (#33: a per-process counter, `req-1`, said
 * nothing across restarts or services).
 */
export function requestId(req: IncomingMessage): string {
  const incoming = req.headers[REQUEST_ID_HEADER];
  return typeof incoming === 'string' && SANE_ID.test(incoming) ? incoming : randomUUID();
}

/**
 * One onRequest hook (cheaper than an async onSend) that gives every answer, errors and 404s
 * included, its `X-Request-Id` and the fixed headers given (frame and sniffing protection, HSTS).
 */
export function installAnswerHeaders(app: FastifyInstance, fixed: Readonly<Record<string, string>>): void {
  const entries = Object.entries(fixed);
  app.addHook('onRequest', (request, reply, done) => {
    void reply.header(REQUEST_ID_HEADER, request.id);
    for (const [name, value] of entries) void reply.header(name, value);
    done();
  });
}

/**
 * The access log's view of a request: the path without its query string, and a lookup key (an
 * email, a user name) replaced by `<key>`: the log keeps what was asked, not the data asked for
 * (#34 finding 10).
 */
export function logView(request: FastifyRequest): { method: string; url: string; route?: string; remoteAddress?: string } {
  const path = request.url.split('?')[0]!;
  const route = request.routeOptions?.url;
  const params = request.params as Record<string, unknown> | undefined;
  const key = params !== undefined && typeof params.key === 'string' && route?.endsWith('/:key') === true
    ? `${path.slice(0, path.lastIndexOf('/'))}/<key>`
    : path;
  return { method: request.method, url: key, ...(route !== undefined ? { route } : {}), ...(request.ip !== undefined ? { remoteAddress: request.ip } : {}) };
}

/** Fastify's `childLoggerFactory`: each request's logger serializes `req` with logView. */
export const childLoggerFactory: NonNullable<FastifyServerOptions['childLoggerFactory']> = (logger, bindings, opts) =>
  logger.child(bindings, { ...opts, serializers: { ...(opts as { serializers?: object }).serializers, req: logView } });
