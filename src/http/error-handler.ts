import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, preHandlerHookHandler } from 'fastify';
import { ShardKitError } from '../errors.js';

/**
 * Largest request line plus headers, in bytes (Node's default is 16 KiB). A multi-get of
 * MAX_MULTI_GET (1000) IDs is a URL of ~21 KB; the largest lookup key, percent-encoded, ~3 KB.
 */
export const MAX_HEADER_BYTES = 64 * 1024;

/** Retryable refusals by design, logged as one short line (see installErrorHandler). */
const QUIET_503: ReadonlySet<string> = new Set(['OVERLOADED', 'SHARD_MOVING', 'HOST_UNKNOWN']);

export interface ErrorBody {
  error: { code: string; message: string };
}

/** The error handler of every context that serves our routes (buildApp's, shardkitRoutes'). */
export function replyWithError(err: FastifyError | Error, request: FastifyRequest, reply: FastifyReply): void {
  const { status, body } = toErrorResponse(err);
  // Clients see only the code and message; the log keeps the cause (storage failures included).
  // 501 is how this service was configured, not a failure: the request log line is enough.
  // Shedding and waiting out a move or a new host are the service working as designed: one short
  // line, no stack (a shed storm once logged 1.2 KB per refused request).
  if (err instanceof ShardKitError && QUIET_503.has(err.code)) request.log.warn(`${err.code}: ${err.message}`);
  else if (status >= 500 && status !== 501) request.log.error({ err }, err instanceof ShardKitError ? `${err.code}: ${err.message}` : 'unhandled error');
  // A shard being moved switches within a second: tell clients when to come back.
  if (err instanceof ShardKitError && err.code === 'SHARD_MOVING') void reply.header('retry-after', '1');
  void reply.code(status).type('application/json').send(body);
}

/**
 * Maps every error to `{"error":{"code","message"}}` once: ShardKitError by its code, Fastify's
 * own validation/parse errors to 4xx codes, anything else to 500 INTERNAL without a stack trace.
 */
export function installErrorHandler(app: FastifyInstance, options: { notFoundPreHandler?: preHandlerHookHandler | preHandlerHookHandler[]; methodNotAllowed?: (request: FastifyRequest, reply: FastifyReply) => boolean } = {}): void {
  app.setErrorHandler(replyWithError);
  app.setNotFoundHandler(options.notFoundPreHandler !== undefined ? { preHandler: options.notFoundPreHandler } : {}, (request, reply) => {
    // A path that exists with other methods is 405 with Allow (RFC 9110 §15.5.6), not "no route".
    if (options.methodNotAllowed?.(request, reply) === true) return;
    void reply.code(404).send({ error: { code: 'NOT_FOUND', message: `no route ${request.method} ${request.url.split('?')[0]}` } });
  });
}

/** Codes for the 4xx statuses plugins answer with besides 400 (errors.ts gives these codes the same statuses). */
const PLUGIN_CODES: Readonly<Record<number, string>> = { 403: 'FORBIDDEN', 404: 'NOT_FOUND', 413: 'PAYLOAD_TOO_LARGE', 415: 'UNSUPPORTED_MEDIA_TYPE' };

export function toErrorResponse(err: unknown): { status: number; body: ErrorBody } {
  if (err instanceof ShardKitError) return { status: err.status, body: { error: { code: err.code, message: err.message } } };
  const e = err as FastifyError & { validation?: unknown };
  if (e.validation) return { status: 400, body: { error: { code: 'INVALID_ARGUMENT', message: e.message } } };
  switch (e.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return { status: 400, body: { error: { code: 'INVALID_JSON', message: 'request body is not valid JSON' } } };
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { status: 413, body: { error: { code: 'PAYLOAD_TOO_LARGE', message: 'request body is too large' } } };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return { status: 415, body: { error: { code: 'UNSUPPORTED_MEDIA_TYPE', message: 'unsupported content type' } } };
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return { status: 400, body: { error: { code: 'INVALID_ARGUMENT', message: 'invalid content length' } } };
    // Fastify's own messages of these two quote the whole URL, up to the 64 KiB of a request line.
    case 'FST_ERR_BAD_URL':
      return { status: 400, body: { error: { code: 'INVALID_ARGUMENT', message: 'the URL path is not valid percent-encoded UTF-8' } } };
    // Only app.inject, which has no request-line limit, gets past MAX_PARAM_LENGTH (data-routes.ts).
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return { status: 400, body: { error: { code: 'INVALID_ARGUMENT', message: 'a path parameter is too long' } } };
  }
  if (typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
    // A plugin's own 4xx (the docs' static files refuse `..` with 403) keeps a code of its status.
    return { status: e.statusCode, body: { error: { code: PLUGIN_CODES[e.statusCode] ?? 'INVALID_ARGUMENT', message: e.message } } };
  }
  return { status: 500, body: { error: { code: 'INTERNAL', message: 'internal error' } } };
}

/**
 * Requests Node's HTTP parser refuses never reach fastify's error handler; fastify's default
 * answer to them has another body shape. This one answers them like every other error, with
 * `{"error":{"code","message"}}`, then closes the connection (the stream cannot be parsed on).
 * When an earlier request of the same connection (pipelined) is still being answered, its
 * response goes out first: a 400 written at once would be read as the answer to that request,
 * which may well have been carried out.
 */
export function clientErrorHandler(err: NodeJS.ErrnoException, socket: Duplex): void {
  // A reset connection has nobody left to answer.
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const error = err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
    ? new ShardKitError('REQUEST_TIMEOUT', 'the request was not received in time')
    : err.code === 'HPE_HEADER_OVERFLOW'
      ? new ShardKitError('HEADERS_TOO_LARGE', `the request line and headers exceed ${MAX_HEADER_BYTES} bytes: send fewer IDs per request or a shorter key`)
      : err.code === 'HPE_CHUNK_EXTENSIONS_OVERFLOW'
        ? new ShardKitError('PAYLOAD_TOO_LARGE', 'the chunk extensions of the request body are too large')
        : new ShardKitError('MALFORMED_REQUEST', `the request is not valid HTTP/1.1 (${err.code ?? 'parse error'})`);
  const answer = () => {
    if (socket.writable) socket.write(rawErrorAnswer(error));
    socket.destroy();
  };
  // Node keeps the response being written on this connection here (lib/_http_server.js).
  const inFlight = (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage;
  // The request still waiting for its body is the one the parser gave up on (the client closed
  // the connection mid-body, or sent a bad chunk): its response never comes, so waiting for it
  // kept the socket in CLOSE-WAIT and its concurrency slot taken for ever. Answer and close now;
  // the request is aborted and its slot released.
  if (inFlight?.req !== undefined && !inFlight.req.complete) {
    answer();
    return;
  }
  if (inFlight !== undefined && inFlight !== null && !inFlight.writableFinished) {
    inFlight.once('finish', answer);
    inFlight.once('close', () => socket.destroy());
    return;
  }
  answer();
}

/** A whole HTTP/1.1 error answer, for a socket fastify cannot answer on: the usual body, then the connection closes. */
export function rawErrorAnswer(error: ShardKitError): string {
  const { status, body } = toErrorResponse(error);
  const text = JSON.stringify(body);
  return `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`;
}

/**
 * An Expect other than 100-continue: Node answers those itself (417, an empty body) unless the
 * server listens for them; this answers with the usual error body instead.
 */
export function expectationFailed(request: IncomingMessage, response: ServerResponse): void {
  const { status, body } = toErrorResponse(new ShardKitError('EXPECTATION_FAILED', `Expect: ${JSON.stringify(String(request.headers.expect).slice(0, 40))} is not supported (only 100-continue)`));
  const text = JSON.stringify(body);
  response.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text), connection: 'close' }).end(text);
}
