import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, preHandlerHookHandler } from 'fastify';
import { ShardKitError } from '../errors.js';

export interface LimitOptions {
  /** Requests per client (remote address) per window; off when undefined. */
  rateLimit?: { max: number; windowMs: number };
  /** Requests answered at once; more are shed with 503 OVERLOADED; off when undefined. */
  maxConcurrent?: number;
  /** Seconds a shed client is told to wait (Retry-After). Default 1. */
  retryAfterSeconds?: number;
}

/** Probes and scrapes: never limited, so a busy service still reports how busy it is. */
const EXEMPT = new Set(['/healthz', '/metrics']);

function exempt(url: string): boolean {
  return EXEMPT.has(url.split('?')[0]!);
}

/**
 * The optional limits of `serve --rate-limit` and `--max-concurrent`, both answering with
 * `Retry-After`: 429 RATE_LIMITED per client (@fastify/rate-limit, in-process counters: each
 * service limits on its own), and 503 OVERLOADED once `maxConcurrent` requests are in flight,
 * rather than queueing without bound. The cap counts from the request's arrival until its
 * response is finished or its connection closed, so slow uploads and downloads count too.
 */
/** Returns the rate limit's check for paths no route has (the not-found handler's), if any. */
export async function installLimits(app: FastifyInstance, options: LimitOptions): Promise<preHandlerHookHandler | undefined> {
  const retryAfter = options.retryAfterSeconds ?? 1;
  const max = options.maxConcurrent;
  if (max !== undefined) {
    let inFlight = 0;
    app.addHook('onRequest', (request, reply, done) => {
      if (exempt(request.url)) return done();
      if (inFlight >= max) {
        void reply.header('retry-after', String(retryAfter));
        done(new ShardKitError('OVERLOADED', `the service is answering ${max} requests already (serve --max-concurrent); retry after ${retryAfter}s`));
        return;
      }
      inFlight++;
      reply.raw.once('close', () => {
        inFlight--;
      });
      done();
    });
  }
  if (options.rateLimit !== undefined) {
    const { max: perWindow, windowMs } = options.rateLimit;
    await app.register(rateLimit, {
      global: true,
      max: perWindow,
      timeWindow: windowMs,
      allowList: (request) => exempt(request.url),
      // The error handler turns this into the usual error body; the plugin has set Retry-After.
      errorResponseBuilder: (_request, context) => new ShardKitError('RATE_LIMITED', `more than ${context.max} requests in ${context.after} from this client (serve --rate-limit); retry after ${Math.ceil(context.ttl / 1000)}s`),
      addHeadersOnExceeding: { 'x-ratelimit-limit': true, 'x-ratelimit-remaining': true, 'x-ratelimit-reset': true },
      addHeaders: { 'x-ratelimit-limit': true, 'x-ratelimit-remaining': true, 'x-ratelimit-reset': true, 'retry-after': true },
    });
    // The plugin limits the routes it sees added; unknown paths were not counted at all (#34 finding 10).
    return app.rateLimit() as preHandlerHookHandler;
  }
  return undefined;
}

/** The most bytes one answer of a batch read (multi-get, the join, batchGet) may hold: RESPONSE_TOO_LARGE past it. */
export const MAX_ANSWER_BYTES = 32 * 1024 * 1024;

/**
 * Objects as the text of one JSON array (undefined ones left out), refused with
 * RESPONSE_TOO_LARGE once past MAX_ANSWER_BYTES: 400 copies of a 1 MiB object made a 416 MB
 * answer, and a join page of 1,000 such objects a 1 GB one.
 */
export function objectsJson(objects: ReadonlyArray<{ toWireJson(): string } | undefined>): string {
  const parts: string[] = [];
  let bytes = 0;
  for (const o of objects) {
    if (o === undefined) continue;
    const json = o.toWireJson();
    bytes += json.length;
    if (bytes > MAX_ANSWER_BYTES) throw new ShardKitError('RESPONSE_TOO_LARGE', `the objects asked for exceed ${MAX_ANSWER_BYTES} bytes: ask for fewer per request`);
    parts.push(json);
  }
  return `[${parts.join(',')}]`;
}
