import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Command } from 'commander';
import { pino, type Logger } from 'pino';
import { defaultConfig, loadConfigFile, parseConfig, resolveSchema, type ShardKitConfig } from '../../config/config.js';
import { SqliteBackend } from '../../storage/sqlite/sqlite-backend.js';
import { ShardMap } from '../../topology/shard-map.js';
import { buildApp, type RoutePlugin } from '../../http/app.js';
import { ticketsRoutes } from '../../http/routes/tickets-routes.js';
import { widecolumnRoutes } from '../../http/routes/widecolumn-routes.js';
import { ShardKit } from '../../store/shard-kit.js';
import { createTicketClient } from '../../tickets/index.js';
import { openWideColumnService } from '../../widecolumn/service.js';
import { action, intOption } from '../run-action.js';

interface ServeOptions {
  config?: string;
  data: string;
  port: number;
  host: string;
  logLevel: string;
  widecolumn: boolean;
}

/** The config file in force: --config, else <data>/shardkit.json, written with the defaults on first start. */
export function ensureConfig(dataDir: string, configPath: string | undefined, log?: Logger): { path: string; config: ShardKitConfig } {
  if (configPath !== undefined) return { path: resolve(configPath), config: loadConfigFile(configPath) };
  const path = join(dataDir, 'shardkit.json');
  if (!existsSync(path)) {
    mkdirSync(dataDir, { recursive: true });
    // 'wx': two services started at once must not overwrite each other's first config.
    try {
      writeFileSync(path, `${JSON.stringify(defaultConfig(), null, 2)}\n`, { flag: 'wx' });
      log?.info({ path }, 'wrote the default config (embedded SQLite, 4096 shards)');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  }
  return { path, config: loadConfigFile(path) };
}

interface Extension {
  plugin: RoutePlugin;
  close(): Promise<void>;
}

/** Route plugins of the other modules, opened from the same config and data dir. */
async function openExtensions(config: ShardKitConfig, dataDir: string, options: ServeOptions, log: Logger): Promise<Extension[]> {
  const out: Extension[] = [];
  try {
    if (options.widecolumn) {
      const wc = await openWideColumnService({ dataDir, config: config.widecolumn, logger: log.child({ module: 'widecolumn' }) });
      out.push({ plugin: widecolumnRoutes(wc.store), close: () => wc.close() });
    }
    if (config.tickets !== undefined) {
      const client = createTicketClient(config.tickets as never);
      out.push({ plugin: ticketsRoutes(client), close: () => client.close() });
    }
  } catch (err) {
    for (const e of out.reverse()) await e.close().catch(() => {});
    throw err;
  }
  return out;
}

export async function serve(options: ServeOptions): Promise<void> {
  const log = pino({ level: options.logLevel });
  const dataDir = resolve(options.data);
  const { path, config } = ensureConfig(dataDir, options.config, log);
  const kit = await ShardKit.open({ config, dataDir });
  let extensions: Extension[] = [];
  try {
    extensions = await openExtensions(config, dataDir, options, log);
  } catch (err) {
    await kit.close();
    throw err;
  }
  const app = await buildApp({ kit, loggerInstance: log, plugins: extensions.map((e) => e.plugin) });
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) {
      log.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    stopping = true;
    log.info({ signal }, 'shutting down: finishing in-flight requests');
    try {
      await app.close();
      for (const e of extensions.reverse()) await e.close();
      await kit.close();
      log.info('stopped');
      process.exit(0);
    } catch (err) {
      log.error({ err }, 'error during shutdown');
      process.exit(1);
    }
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));
  try {
    await app.listen({ port: options.port, host: options.host });
  } catch (err) {
    await app.close();
    for (const e of extensions.reverse()) await e.close();
    await kit.close();
    throw err;
  }
  log.info({ config: path, dataDir, backend: kit.backend.kind, topologyVersion: (await kit.shardMap()).version }, 'shardkit serving');
}

/** The OpenAPI document of the object, mapping and lookup routes, built without touching storage. */
export async function openapiDocument(): Promise<unknown> {
  const config = parseConfig(defaultConfig());
  const schema = resolveSchema(config);
  // A kit that is never called: building the app only collects the route schemas.
  const kit = new ShardKit({ backend: new SqliteBackend({ root: join(tmpdir(), 'shardkit-openapi-unused'), schema }), schema, shardMap: ShardMap.fromJSON(config.shardMap) });
  const app = await buildApp({ kit, metrics: true });
  try {
    return app.swagger();
  } finally {
    await app.close();
    await kit.close();
  }
}

export function register(program: Command): void {
  program
    .command('openapi')
    .description('Print the OpenAPI 3 document of the HTTP API (objects, mappings, lookups, system routes)')
    .option('--out <file>', 'write it to this file instead of stdout')
    .action(action(async (opts: { out?: string }) => {
      const text = `${JSON.stringify(await openapiDocument(), null, 2)}\n`;
      if (opts.out !== undefined) writeFileSync(opts.out, text);
      else process.stdout.write(text);
    }));

  program
    .command('serve')
    .description('Run the HTTP service: objects, mappings, lookups (and the wide-column store, tickets when configured)')
    .option('--config <file>', 'config file (default: <data>/shardkit.json, written with the embedded defaults on first start)')
    .option('--data <dir>', 'data directory (SQLite shard files, topology, wide-column store)', './data')
    .option('--port <n>', 'TCP port (0 picks a free one)', intOption('--port', 0, 65535), 7070)
    .option('--host <address>', 'address to listen on', '127.0.0.1')
    .option('--log-level <level>', 'pino log level (fatal, error, warn, info, debug, trace, silent)', 'info')
    .option('--no-widecolumn', 'do not open the wide-column store')
    .addHelpText('after', `
Logs are JSON lines on stdout. SIGTERM or SIGINT stops accepting connections, finishes the
requests in flight, closes the shard files and exits 0.

Example:
  shardkit serve --data ./data --port 7070
  curl -s -X POST localhost:7070/v1/objects/user -H 'content-type: application/json' -d '{"data":{"name":"ann"}}'`)
    .action(action(async (opts: ServeOptions) => serve(opts)));
}
