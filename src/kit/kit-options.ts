import { z } from 'zod';
import { ShardKitError } from '../errors.js';

const fn = (what: string) => z.custom<(...args: never[]) => unknown>((v) => typeof v === 'function', { message: `must be a function (${what})` });
const withMethod = (method: string, what: string) =>
  z.custom<object>((v) => typeof v === 'object' && v !== null && typeof (v as Record<string, unknown>)[method] === 'function', { message: `must be ${what} (an object with ${method}())` });
const validators = z.record(z.string(), z.custom<object>((v) => typeof (v as { '~standard'?: { validate?: unknown } } | null)?.['~standard']?.validate === 'function', { message: 'must be a Standard Schema validator (zod, valibot, arktype)' }));
const tracer = withMethod('startActiveSpan', "an OpenTelemetry tracer, trace.getTracer('shardkit')");
/** The service heartbeat (#28): on or off, or its pace and name. */
const heartbeat = z.union([z.boolean(), z.object({
  intervalMs: z.number().int().min(10).max(3_600_000).optional(),
  ttlMs: z.number().int().min(10).max(86_400_000).optional(),
  id: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, 'must be 1-128 of [A-Za-z0-9._-], starting with a letter or digit').optional(),
}).strict()]);

/** ShardKit.open's options; unknown keys are refused (a misspelled `configpath` must not be ignored). */
const openOptions = z.object({
  config: z.record(z.string(), z.unknown()).optional(),
  configPath: z.string().min(1).optional(),
  dataDir: z.string().min(1).optional(),
  random: fn('() => number in [0, 1)').optional(),
  validators: validators.optional(),
  tracer: tracer.optional(),
  heartbeat: heartbeat.optional(),
  onTopologyError: fn('(err) => void').optional(),
}).strict();

/** new ShardKit(options): the parts a caller passes by hand (the backend and stores are checked by shape). */
const kitOptions = z.object({
  backend: withMethod('getObjects', 'a ShardBackend'),
  schema: z.object({ types: z.array(z.unknown()) }).loose(),
  topology: withMethod('watch', 'a TopologyStore').optional(),
  shardMap: withMethod('locate', 'a ShardMap').optional(),
  random: fn('() => number in [0, 1)').optional(),
  hostSource: fn('() => hosts').optional(),
  validators: validators.optional(),
  dataChecks: z.instanceof(Map).optional(),
  cache: z.custom<object>((v) => typeof v === 'object' && v !== null, { message: 'must be a Cache or { cache, ttlSeconds, keyPrefix }' }).optional(),
  ownsResources: z.boolean().optional(),
  tracer: tracer.optional(),
  heartbeat: heartbeat.optional(),
}).strict();

function check(schema: z.ZodType, value: unknown, where: string): void {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new ShardKitError('INVALID_ARGUMENT', `${where} takes an options object`);
  const parsed = schema.safeParse(value);
  if (parsed.success) return;
  const issue = parsed.error.issues[0]!;
  const path = issue.code === 'unrecognized_keys' ? issue.keys.join(', ') : issue.path.join('.');
  const message = issue.code === 'unrecognized_keys' ? 'is not an option' : issue.message;
  throw new ShardKitError('INVALID_ARGUMENT', `${where}: ${path || '(options)'} ${message}`, { details: { path } });
}

/** INVALID_ARGUMENT naming the option, before anything is opened. */
export function checkOpenOptions(value: unknown): void {
  check(openOptions, value, 'ShardKit.open');
}

export function checkKitOptions(value: unknown): void {
  check(kitOptions, value, 'new ShardKit');
}

/**
 * A method's options object: an object whose keys are all options of `where` (a misspelled
 * `curser` would silently read the first page again). Values are checked by the method itself.
 * A `for...in` rather than zod: it runs on every call with options, reads included.
 */
export function checkMethodOptions(options: unknown, allowed: ReadonlySet<string>, where: string): void {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) throw new ShardKitError('INVALID_ARGUMENT', `${where}: options must be an object`);
  for (const key in options) {
    if (!allowed.has(key)) throw new ShardKitError('INVALID_ARGUMENT', `${where}: ${key} is not an option (${[...allowed].join(', ')})`, { details: { path: key } });
  }
}
