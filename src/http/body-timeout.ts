import { STATUS_CODES } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { toErrorResponse } from './error-handler.js';
import { ShardKitError } from '../errors.js';

/**
 * Longest time a request body may take to arrive, from the request's headers on (default 30 s:
 * with the 1 MiB body limit, an average of at least 35 KB/s). Fastify's own `requestTimeout` is
 * off (0), and Node checks its timeouts only every 30 s, so a client sending a byte every few
 * seconds held a socket and a --max-concurrent slot for as long as it liked (#34 finding 4).
 */
export const DEFAULT_BODY_TIMEOUT_MS = 30_000;

/**
 * A request whose body is not complete `ms` after its headers gets 408 REQUEST_TIMEOUT and its
 * connection closed: the answer goes straight to the socket, because fastify is still waiting for
 * the body and would answer nothing else. Requests without a body are complete on arrival and
 * never affected, whatever their handlers take.
 */
export function installBodyTimeout(app: FastifyInstance, ms: number): void {
  app.addHook('onRequest', (request, reply, done) => {
    const req = request.raw;
    if (req.complete) return done();
    const timer = setTimeout(() => {
      if (req.complete) return;
      const socket = req.socket;
      request.log.warn(`REQUEST_TIMEOUT: the body of ${request.method} ${request.routeOptions.url ?? 'an unknown route'} was not complete after ${ms} ms`);
      const { status, body } = toErrorResponse(new ShardKitError('REQUEST_TIMEOUT', `the request body did not arrive within ${Math.round(ms / 1000)} s; send it faster or in smaller requests`));
      if (socket.writable && !reply.raw.headersSent) {
        const text = JSON.stringify(body);
        socket.write(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`);
      }
      // Closing the socket aborts the request: its slot (limits.ts) is freed with it.
      socket.destroySoon();
    }, ms);
    timer.unref();
    req.once('end', () => clearTimeout(timer));
    reply.raw.once('close', () => clearTimeout(timer));
    done();
  });
}
