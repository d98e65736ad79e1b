import { isUtf8 } from 'node:buffer';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ShardKitError } from '../errors.js';
import type { Registry } from 'prom-client';
import type { ShardKit } from '../kit/shard-kit.js';
import { checkIntegerLiterals } from './safe-numbers.js';
import { checkDuplicateKeys } from './duplicate-keys.js';
import { MAX_HEADER_BYTES } from './error-handler.js';
import { lookupRoutes } from './routes/lookup-routes.js';
import { mappingRoutes } from './routes/mapping-routes.js';
import { objectRoutes } from './routes/object-routes.js';
import { shardStatsRoutes } from './routes/shard-stats-routes.js';
import { systemRoutes } from './routes/system-routes.js';

export const DEFAULT_BODY_LIMIT = 1024 * 1024;

/**
 * Longest path parameter the router takes: the longest request line, so that every parameter
 * reaches its route's own checks (an over-long ID is INVALID_ID like any malformed one). With 16
 * KiB, the router's own refusal answered 414 with the whole URL in its message. Lookup keys need
 * ~3 KiB (1024 UTF-8 bytes, percent-encoded).
 */
export const MAX_PARAM_LENGTH = MAX_HEADER_BYTES;

/**
 * The data API (objects, mappings, lookups, topology and health, shard stats) with its JSON
 * parsers, on `api`: an encapsulated context of buildApp's server or of the host app that
 * registered shardkitRoutes.
 */
export async function registerDataRoutes(api: FastifyInstance, kit: ShardKit, options: { bodyLimit: number; registry?: Registry }): Promise<void> {
  installJsonParsers(api, options.bodyLimit);
  await api.register(objectRoutes(kit));
  await api.register(mappingRoutes(kit));
  await api.register(lookupRoutes(kit));
  await api.register(systemRoutes(kit, options.registry));
  await api.register(shardStatsRoutes(kit));
}

/**
 * The JSON parsers of `api`'s context: buildApp's whole server (every module's routes), or the
 * context of a host app that registered shardkitRoutes.
 */
export function installJsonParsers(api: FastifyInstance, bodyLimit: number): void {
  // RFC 7396 patches arrive as application/merge-patch+json and parse like JSON (PATCH only:
  // contract-hooks.ts refuses the type on other methods).
  // Every JSON body: integer literals JSON.parse would round are refused (safe-numbers.ts), and so
  // is a name given twice in one object (duplicate-keys.ts); a
  // route whose body is optional (config.optionalBody) takes an empty body as none.
  const parseJson = api.getDefaultJsonParser('error', 'error');
  const parser = (request: FastifyRequest, body: string | Buffer, done: (err: Error | null, value?: unknown) => void) => {
    // Read as bytes: decoded as a string, bytes that are not UTF-8 became U+FFFD and were stored
    // so (two different names could become one). RFC 8259 JSON text is UTF-8.
    if (!isUtf8(body as Buffer)) {
      done(new ShardKitError('INVALID_JSON', 'the body is not valid UTF-8 (JSON text must be UTF-8; send binary values as base64)'));
      return;
    }
    const text = (body as Buffer).toString('utf8');
    if (text.length === 0 && request.routeOptions.config.optionalBody === true) {
      done(null, undefined);
      return;
    }
    parseJson(request, text, (err, value) => {
      if (err !== null) {
        done(err);
        return;
      }
      try {
        checkIntegerLiterals(text);
        checkDuplicateKeys(text);
      } catch (refused) {
        done(refused as Error);
        return;
      }
      done(null, value);
    });
  };
  // A context that inherited them (buildApp's routes under its server's parsers) replaces them.
  api.removeContentTypeParser(['application/json', 'application/merge-patch+json'].filter((t) => api.hasContentTypeParser(t)));
  api.addContentTypeParser('application/json', { parseAs: 'buffer', bodyLimit }, parser);
  api.addContentTypeParser('application/merge-patch+json', { parseAs: 'buffer', bodyLimit }, parser);
}
