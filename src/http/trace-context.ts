import type * as otel from '@opentelemetry/api';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { requireOptional } from '../util/optional-dependency.js';
import type { KitTracer } from '../kit/operation-events.js';

/** W3C Trace Context: the header a caller's trace arrives in. */
export const TRACEPARENT_HEADER = 'traceparent';
/** W3C Trace Context level 2: the header our answer names its trace and server span in. */
export const TRACERESPONSE_HEADER = 'traceresponse';

/** version-traceid-parentid-flags; a future version may append fields after a dash. */
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

type Api = typeof otel;

/**
 * The caller's W3C `traceparent` (and `tracestate`) as a remote parent in `base`, or undefined
 * when it is absent or malformed (a new trace then starts, as the spec asks). Parsed here rather
 * than left to the global propagator, which is a no-op until an SDK registers one.
 */
function parentFromTraceparent(api: Api, base: otel.Context, headers: FastifyRequest['headers']): otel.Context | undefined {
  const header = headers[TRACEPARENT_HEADER];
  const m = typeof header === 'string' ? TRACEPARENT.exec(header.trim()) : null;
  if (m === null) return undefined;
  const [, version, traceId, spanId, flags, rest] = m;
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined;
  const state = headers.tracestate;
  const spanContext: otel.SpanContext = {
    traceId: traceId!,
    spanId: spanId!,
    traceFlags: parseInt(flags!, 16) & 1,
    isRemote: true,
    ...(typeof state === 'string' && state !== '' ? { traceState: api.createTraceState(state) } : {}),
  };
  return api.trace.isSpanContextValid(spanContext) ? api.trace.setSpanContext(base, spanContext) : undefined;
}

interface TracedRequest {
  span: otel.Span;
  context: otel.Context;
}

/**
 * One SERVER span per request (`GET /v1/objects/:id`), child of the caller's `traceparent`, and
 * active while the handler runs, so the kit's storage spans (`shardkit.<op>`) are its children
 * (with a context manager registered, as the OpenTelemetry Node SDK does). The answer carries
 * `traceresponse: 00-<trace id>-<span id>-<flags>`, so a caller can find the trace. Installed only
 * with a tracer: without one no hook exists and a request pays nothing. `tracer` is an
 * OpenTelemetry Tracer, typed structurally like the kit's; @opentelemetry/api (which the caller
 * has, having made the tracer) is loaded here.
 */
export function installTracing(app: FastifyInstance, tracer: KitTracer): void {
  const api = requireOptional<Api>('@opentelemetry/api', 'tracing HTTP requests');
  const otelTracer = tracer as unknown as otel.Tracer;
  const traced = new WeakMap<FastifyRequest, TracedRequest>();

  app.addHook('onRequest', (request, reply, done) => {
    const active = api.context.active();
    // The SDK's propagators when registered (B3, baggage, ...); W3C traceparent in any case.
    const extracted = api.propagation.extract(active, request.headers);
    const parent = api.trace.getSpanContext(extracted) !== undefined ? extracted : (parentFromTraceparent(api, active, request.headers) ?? active);
    const route = request.routeOptions.url ?? 'unmatched';
    const span = otelTracer.startSpan(`${request.method} ${route}`, {
      kind: api.SpanKind.SERVER,
      attributes: { 'http.request.method': request.method, 'http.route': route, 'url.path': request.url.split('?')[0]!, 'shardkit.request_id': request.id },
    }, parent);
    const sc = span.spanContext();
    traced.set(request, { span, context: api.trace.setSpan(parent, span) });
    void reply.header(TRACERESPONSE_HEADER, `00-${sc.traceId}-${sc.spanId}-0${sc.traceFlags & 1}`);
    done();
  });
  // After the body is read (its stream events run outside any context), so the handler and every
  // hook after this one run inside the request's span.
  app.addHook('preHandler', (request, _reply, done) => {
    const t = traced.get(request);
    if (t === undefined) done();
    else api.context.with(t.context, done);
  });
  app.addHook('onError', (request, _reply, error, done) => {
    traced.get(request)?.span.recordException(error);
    done();
  });
  // A caller that hangs up before the answer gets no onResponse: its span still ends, as an error.
  app.addHook('onRequestAbort', (request, done) => {
    const t = traced.get(request);
    if (t !== undefined) {
      t.span.setStatus({ code: api.SpanStatusCode.ERROR, message: 'the client closed the connection before the answer' });
      t.span.end();
      traced.delete(request);
    }
    done();
  });
  app.addHook('onResponse', (request, reply, done) => {
    const t = traced.get(request);
    if (t !== undefined) {
      t.span.setAttribute('http.response.status_code', reply.statusCode);
      if (reply.statusCode >= 500) t.span.setStatus({ code: api.SpanStatusCode.ERROR });
      t.span.end();
      traced.delete(request);
    }
    done();
  });
}
