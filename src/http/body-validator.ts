import AjvCompiler from '@fastify/ajv-compiler';

const ajvCompiler = AjvCompiler();

/** What fastify hands a validator compiler: the route's schema for one part of the request. */
export interface ValidatorRoute {
  schema: unknown;
  method: string;
  url: string;
  httpPart?: string;
}

/**
 * The compiler factory's shape, written out: a declaration that named @fastify/ajv-compiler's
 * namespace through its default import did not type-check for consumers resolving as bundlers do.
 */
export type ValidatorCompilerFactory = (externalSchemas: Record<string, unknown>, ajvOptions?: object) => (route: ValidatorRoute) => unknown;

/**
 * Fastify's Ajv coerces types, which query strings and path params need ("?limit=50") but bodies
 * must not get: `{"shard":"1"}` or `{"value":5}` are wrong JSON, not a number or a string. Bodies
 * get a compiler that does not coerce; every other part keeps coercion. (The package types the
 * compiler's argument as a bare schema; fastify passes, and the compiler reads, the route
 * definition { schema, method, url, httpPart }: hence the casts.)
 */
export const bodyStrictValidator: ValidatorCompilerFactory = (externalSchemas, ajvOptions) => {
  type Options = Parameters<typeof ajvCompiler>[1];
  const build = (options: unknown) => ajvCompiler(externalSchemas as Parameters<typeof ajvCompiler>[0], options as Options) as unknown as (route: ValidatorRoute) => unknown;
  const options = (ajvOptions ?? {}) as { customOptions?: object };
  const coercing = build(ajvOptions);
  const strict = build({ ...options, customOptions: { ...options.customOptions, coerceTypes: false } });
  return (route) => (route.httpPart === 'body' ? strict : coercing)(route);
};
