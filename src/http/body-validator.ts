import AjvCompiler from '@fastify/ajv-compiler';

const ajvCompiler = AjvCompiler();

/**
 * Fastify's Ajv coerces types, which query strings and path params need ("?limit=50") but bodies
 * must not get: `{"shard":"1"}` or `{"value":5}` are wrong JSON, not a number or a string. Bodies
 * get a compiler that does not coerce; every other part keeps coercion. (The package types the
 * compiler's argument as a bare schema; fastify passes, and the compiler reads, the route
 * definition { schema, method, url, httpPart }: hence the one cast.)
 */
export const bodyStrictValidator = ((externalSchemas: Parameters<typeof ajvCompiler>[0], ajvOptions?: Parameters<typeof ajvCompiler>[1]) => {
  const coercing = ajvCompiler(externalSchemas, ajvOptions) as unknown as (route: AjvCompiler.RouteDefinition) => unknown;
  const opts = (ajvOptions ?? {}) as { customOptions?: Record<string, unknown> };
  const strict = ajvCompiler(externalSchemas, { ...opts, customOptions: { ...opts.customOptions, coerceTypes: false } } as Parameters<typeof ajvCompiler>[1]) as unknown as typeof coercing;
  return (route: AjvCompiler.RouteDefinition) => (route.httpPart === 'body' ? strict : coercing)(route);
}) as unknown as typeof ajvCompiler;
