import type { EventEmitter } from 'node:events';
import type { ShardRef } from '../storage/shard-backend.js';

/**
 * One storage call as the kit made it (Kysely's `log` event, Prisma's query events): emitted on
 * `kit.events` as 'operation' when a listener is attached, after the call settles. A held write or
 * a retry after a move's fence is one operation, timed from the first try.
 */
export interface OperationEvent {
  /** The kit's operation (`getObjects`, `insertObject`, `addMapping`, ...). */
  op: string;
  fleet: ShardRef['fleet'];
  shard: number;
  /** The master the call was routed to first. */
  host: string;
  durationMs: number;
  /** The error it failed with (a ShardKitError with a `code` for storage and caller errors). */
  error?: unknown;
}

/**
 * The part of an OpenTelemetry `Tracer` (`trace.getTracer('shardkit')` from @opentelemetry/api)
 * the kit uses, typed structurally so shardkit depends on no OpenTelemetry package: without a
 * tracer nothing is called and nothing is loaded.
 */
export interface KitTracer {
  startActiveSpan<F extends (span: KitSpan) => unknown>(name: string, options: { attributes?: Record<string, string | number> }, fn: F): ReturnType<F>;
}

/** The part of an OpenTelemetry `Span` the kit uses. */
export interface KitSpan {
  recordException(exception: Error): void;
  /** OpenTelemetry's SpanStatusCode.ERROR is 2. */
  setStatus(status: { code: number; message?: string }): void;
  end(): void;
}

const SPAN_STATUS_ERROR = 2;

/** Runs `work` timed, as a span when a tracer is given, and reports it as an 'operation' event. */
export function observeOperation<T>(events: EventEmitter, tracer: KitTracer | undefined, ref: ShardRef, op: string, work: () => Promise<T>): Promise<T> {
  const started = performance.now();
  const report = (error?: unknown) => {
    if (events.listenerCount('operation') === 0) return;
    const event: OperationEvent = { op, fleet: ref.fleet, shard: ref.shard, host: ref.host, durationMs: performance.now() - started, ...(error !== undefined ? { error } : {}) };
    events.emit('operation', event);
  };
  const run = (span?: KitSpan) => work().then(
    (value) => {
      span?.end();
      report();
      return value;
    },
    (err: unknown) => {
      if (span !== undefined) {
        span.recordException(err instanceof Error ? err : new Error(String(err)));
        span.setStatus({ code: SPAN_STATUS_ERROR, message: (err as { code?: string }).code ?? (err as Error).message });
        span.end();
      }
      report(err ?? new Error('rejected without a reason'));
      throw err;
    },
  );
  if (tracer === undefined) return run();
  return tracer.startActiveSpan(`shardkit.${op}`, { attributes: { 'shardkit.op': op, 'shardkit.fleet': ref.fleet, 'shardkit.shard': ref.shard, 'shardkit.host': ref.host, 'db.system': 'shardkit' } }, (span) => run(span));
}
