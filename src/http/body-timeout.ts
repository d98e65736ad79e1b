import { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { rawErrorAnswer } from './error-handler.js';
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
 * the body and would answer nothing else; a request answered before its body came (shed, refused)
 * just has its connection closed. Requests without a body are complete on arrival and never
 * affected, whatever their handlers take.
 */
export function installBodyTimeout(app: FastifyInstance, ms: number): void {
  app.addHook('onRequest', (request, reply, done) => {
    const req = request.raw;
    const hasBody = req.headers['transfer-encoding'] !== undefined || (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0');
    const socket = req.socket;
    // app.inject's requests have no network socket, and no client to be slow.
    if (!hasBody || req.complete || !(socket instanceof Socket)) return done();
    const timer = setTimeout(() => {
      if (req.complete) return;
      request.log.warn(`REQUEST_TIMEOUT: the body of ${request.method} ${request.routeOptions.url ?? 'an unknown route'} was not complete after ${ms} ms`);
      // Answered already (shed, refused): only the connection is left to close.
      if (socket.writable && !reply.raw.headersSent) {
        socket.write(rawErrorAnswer(new ShardKitError('REQUEST_TIMEOUT', `the request body did not arrive within ${Math.round(ms / 1000)} s; send it faster or in smaller requests`)));
      }
      // Closing the socket aborts the request: its slot (limits.ts) is freed with it.
      socket.end(() => socket.destroy());
      // A client that reads nothing never lets the answer drain: it loses the socket anyway.
      setTimeout(() => socket.destroy(), ms).unref();
    }, ms);
    timer.unref();
    // Not cleared when the answer goes out: a request answered before its body arrived (shed with
    // 503, refused with 4xx) keeps its connection while Node reads and drops the rest of the body,
    // and a trickling client held that socket for ever (found by test/http/abuse-swarm).
    // The socket outlives its request on a kept-alive connection: a listener left on it per
    // request grew without bound (MaxListenersExceededWarning after 10 uploads).
    const stop = () => {
      clearTimeout(timer);
      socket.removeListener('close', stop);
    };
    req.once('end', stop);
    socket.once('close', stop);
    done();
  });
}
