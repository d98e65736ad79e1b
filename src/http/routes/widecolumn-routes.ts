// The wide-column HTTP API: one plugin that registers the data routes and the admin routes
// (src/http/routes/widecolumn/); schemas, value encoding and each group of routes live there.
import type { FastifyInstance } from 'fastify';
import type {} from '@fastify/swagger';
import { ShardKitError } from '../../errors.js';
import type { WideColumnEngine } from '../../widecolumn/engine.js';
import { DEFAULT_LIMITS } from '../../widecolumn/limits.js';
import { exportDirOf } from '../../widecolumn/service.js';
import { registerAdminRoutes } from './widecolumn/admin-routes.js';
import { registerDataRoutes } from './widecolumn/data-routes.js';
import { measuredEngine } from '../../widecolumn/engine-metrics.js';
import { registerWideColumnMetrics } from '../module-metrics.js';

function disabled(): ShardKitError {
  return new ShardKitError('WIDECOLUMN_DISABLED', 'this service runs without the wide-column store (started with --no-widecolumn): restart it without that flag, or use a service that has it (docs/widecolumn.md)');
}

/**
 * The routes of a service started without the wide-column store (`serve --no-widecolumn`): the
 * same paths and schemas, each answering 501 WIDECOLUMN_DISABLED before any validation, so a
 * caller learns why rather than getting a bare 404 "no route". The refusal is a route-level
 * onRequest hook appended after the admin routes' token check (admin-auth.ts adds that one from
 * the root's onRoute), so an admin route without a token is still 401/403 first. The store
 * behind them throws the same error if anything ever reaches it.
 */
export function widecolumnDisabledRoutes(): (app: FastifyInstance) => Promise<void> {
  const refuse = async (): Promise<void> => {
    throw disabled();
  };
  const store = new Proxy({ limits: DEFAULT_LIMITS } as unknown as WideColumnEngine, {
    get(target, prop) {
      if (prop === 'limits') return (target as { limits: unknown }).limits;
      throw disabled();
    },
  });
  const routes = widecolumnRoutes(store, { exportDir: '', metrics: false });
  return async (app: FastifyInstance) => {
    app.addHook('onRoute', (route) => {
      route.onRequest = route.onRequest === undefined ? refuse : [...[route.onRequest].flat(), refuse];
    });
    await routes(app);
  };
}

export interface WidecolumnRoutesOptions {
  /** The only directory admin backups and exports write into (default: the one openWideColumnService
   *  chose for this store, else `widecolumn-exports` next to the store directory). */
  exportDir?: string;
  /** Time and count the engine's calls on the app's /metrics (default true). */
  metrics?: boolean;
}

/**
 * The wide-column HTTP API (issue 6 §2) plus admin endpoints that let `shardkit wc --url` ask a
 * running service to compact, back up or export. A plugin for `buildApp({ plugins })`; the
 * store stays owned by the caller. Row keys travel URL-encoded in the path (the route is a
 * wildcard so long keys are not cut by the router's parameter length limit). Every body route
 * refuses values of the wrong JSON type instead of letting Ajv coerce them (bodyStrictValidator, app.ts).
 */
export function widecolumnRoutes(store: WideColumnEngine, options: WidecolumnRoutesOptions = {}): (app: FastifyInstance) => Promise<void> {
  const bodyLimit = Math.ceil(store.limits.maxBatchBytes * 1.5) + 1024 * 1024;
  const exportDir = options.exportDir ?? exportDirOf(store);
  return async (app: FastifyInstance) => {
    let engine = store;
    if (options.metrics !== false && app.metricsRegistry !== null && app.metricsRegistry !== undefined) {
      const measured = measuredEngine(store);
      registerWideColumnMetrics(app.metricsRegistry, measured.metrics);
      engine = measured.engine;
    }
    await registerDataRoutes(app, engine, bodyLimit);
    await registerAdminRoutes(app, engine, exportDir);
  };
}
