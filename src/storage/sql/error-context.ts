import type { Fleet } from '../shard-backend.js';
import { shardDatabaseName } from '../shard-names.js';

/** Where an operation ran, for error messages that name the shard. */
export interface ErrorContext {
  host: string;
  shard?: number;
  fleet?: Fleet;
}

/** A driver error's string `code`, if it has one. */
export function errorCodeOf(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** "mod shard 5 (db00005 on MySQL001A)", or "host MySQL001A" for host-wide statements. */
export function whereText(ctx: ErrorContext): string {
  if (ctx.shard === undefined) return `host ${ctx.host}`;
  const kind = ctx.fleet === 'lookups' ? 'mod shard' : 'shard';
  return `${kind} ${ctx.shard} (${shardDatabaseName(ctx.shard)} on ${ctx.host})`;
}

/** The details every mapped error carries: where, and the driver's own code. */
export function errorDetails(ctx: ErrorContext, driverCode: string): Record<string, unknown> {
  return { host: ctx.host, ...(ctx.shard !== undefined ? { shard: ctx.shard, fleet: ctx.fleet ?? 'objects' } : {}), driverCode };
}
