import type { FastifyPluginAsync } from 'fastify';
import { ShardKitError } from '../errors.js';
import type { ShardKit } from '../kit/shard-kit.js';
import { bodyStrictValidator } from './body-validator.js';
import { installContractHooks } from './contract-hooks.js';
import { DEFAULT_BODY_LIMIT, MAX_PARAM_LENGTH, registerDataRoutes } from './data-routes.js';
import { replyWithError } from './error-handler.js';

export interface ShardkitRoutesOptions {
  kit: ShardKit;
  /** Largest request body of our routes in bytes (413 PAYLOAD_TOO_LARGE beyond). Default 1 MiB. */
  bodyLimit?: number;
  /** Fastify's route prefix: `/api` serves `/api/v1/objects/...`. */
  prefix?: string;
}

/**
 * shardkit's data API (objects, mappings, lookups, topology, health, shard stats) mounted into a
 * Fastify server you own: `await app.register(shardkitRoutes, { kit })`, beside your routes.
 * Encapsulated (not wrapped in fastify-plugin): our JSON parsers (no integer JSON.parse would
 * round), body validation without type coercion and `{"error":{"code","message"}}` errors apply
 * to our routes only, and your hooks (auth, logging, rate limits) apply to ours. buildApp adds
 * what a standalone service needs: OpenAPI and /docs, /metrics, the dashboard, auth files,
 * limits and 405s. The host router's maxParamLength should be at least 16384 for long lookup
 * keys; past it, the host's router answers 414 in its own shape, quoting the URL (buildApp's
 * router takes any parameter that fits its request line: MAX_PARAM_LENGTH).
 */
export const shardkitRoutes: FastifyPluginAsync<ShardkitRoutesOptions> = async (api, options) => {
  if (options?.kit === undefined) throw new ShardKitError('INVALID_ARGUMENT', 'shardkitRoutes needs { kit }: app.register(shardkitRoutes, { kit })');
  api.setValidatorCompiler(bodyStrictValidator({}, { customOptions: { removeAdditional: false } } as Parameters<typeof bodyStrictValidator>[1]) as unknown as Parameters<typeof api.setValidatorCompiler>[0]);
  api.setErrorHandler(replyWithError);
  installContractHooks(api, MAX_PARAM_LENGTH, { statusSchemas: false });
  await registerDataRoutes(api, options.kit, { bodyLimit: options.bodyLimit ?? DEFAULT_BODY_LIMIT });
};
