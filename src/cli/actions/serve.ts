import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createSecureContext, type SecureContextOptions } from 'node:tls';
import { pino, type Logger } from 'pino';
import { defaultConfig, loadConfigFile, type ShardKitConfig } from '../../config/config.js';
import { ShardKitError } from '../../errors.js';
import { ADMIN_TOKEN_ENV, checkAdminToken, type AdminAccess } from '../../http/admin-auth.js';
import { AUTH_FILE_ENV, hashToken, TokenSet } from '../../http/auth-tokens.js';
import { buildApp, type RoutePlugin } from '../../http/app.js';
import { ticketsRoutes, widecolumnDisabledRoutes, widecolumnRoutes } from '../../http/routes/index.js';
import { ShardKit } from '../../kit/shard-kit.js';
import { createTicketClient } from '../../tickets/index.js';
import { openWideColumnService } from '../../widecolumn/service.js';

export interface ServeOptions {
  config?: string;
  data: string;
  port: number;
  host: string;
  logLevel: string;
  widecolumn: boolean;
  dashboard: boolean;
  adminTokenFile?: string;
  authFile?: string;
  tlsCert?: string;
  tlsKey?: string;
  tlsClientCa?: string;
  rateLimit?: number;
  rateWindow?: number;
  maxConcurrent?: number;
  bodyTimeout?: number;
}

/** The token set of --auth-file / SHARDKIT_AUTH_FILE, with the admin token (if any) as an admin-scope one. */
export function tokenSet(options: Pick<ServeOptions, 'authFile'>, admin: AdminAccess, env: NodeJS.ProcessEnv = process.env): TokenSet | undefined {
  const file = options.authFile ?? (env[AUTH_FILE_ENV] !== undefined && env[AUTH_FILE_ENV] !== '' ? env[AUTH_FILE_ENV] : undefined);
  if (file === undefined) return undefined;
  return new TokenSet(file, admin.kind === 'token' ? [{ digest: hashToken(admin.token), scope: 'admin' }] : []);
}

/** Node https options of --tls-cert/--tls-key/--tls-client-ca; undefined for plain HTTP. */
export function tlsOptions(options: Pick<ServeOptions, 'tlsCert' | 'tlsKey' | 'tlsClientCa'>): import('node:https').ServerOptions | undefined {
  const { tlsCert, tlsKey, tlsClientCa } = options;
  if (tlsCert === undefined && tlsKey === undefined) {
    if (tlsClientCa !== undefined) throw new ShardKitError('INVALID_ARGUMENT', '--tls-client-ca needs --tls-cert and --tls-key');
    return undefined;
  }
  if (tlsCert === undefined || tlsKey === undefined) throw new ShardKitError('INVALID_ARGUMENT', '--tls-cert and --tls-key go together');
  const read = (file: string, what: string) => {
    try {
      return readFileSync(file);
    } catch (err) {
      throw new ShardKitError('INVALID_CONFIG', `cannot read the ${what} ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
  };
  const cert = read(tlsCert, 'TLS certificate');
  const key = read(tlsKey, 'TLS key');
  // Parsed now, one file at a time, so that a wrong file is named: the server would only say
  // "PEM routines::no start line" when it starts, after the shards are open.
  checkPem({ cert }, `--tls-cert ${tlsCert} is not a PEM certificate`);
  checkPem({ key }, `--tls-key ${tlsKey} is not a PEM private key`);
  checkPem({ cert, key }, `--tls-key ${tlsKey} is not the private key of --tls-cert ${tlsCert}`);
  return {
    cert,
    key,
    ...(tlsClientCa !== undefined ? { ca: read(tlsClientCa, 'client CA bundle'), requestCert: true, rejectUnauthorized: true } : {}),
  };
}

function checkPem(material: SecureContextOptions, problem: string): void {
  try {
    createSecureContext(material);
  } catch (err) {
    throw new ShardKitError('INVALID_ARGUMENT', `${problem} (${(err as { reason?: string }).reason ?? (err as Error).message})`, { cause: err });
  }
}

/**
 * Admin access from --admin-token-file or SHARDKIT_ADMIN_TOKEN; without a token the admin routes
 * are open only when the service listens on loopback, where only this machine can reach them.
 */
export function adminAccess(options: Pick<ServeOptions, 'host' | 'adminTokenFile'>, env: NodeJS.ProcessEnv = process.env): AdminAccess {
  if (options.adminTokenFile !== undefined) {
    let text: string;
    try {
      text = readFileSync(options.adminTokenFile, 'utf8');
    } catch (err) {
      throw new ShardKitError('INVALID_CONFIG', `cannot read the admin token file ${options.adminTokenFile}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
    return { kind: 'token', token: checkAdminToken(text, options.adminTokenFile) };
  }
  const fromEnv = env[ADMIN_TOKEN_ENV];
  if (fromEnv !== undefined && fromEnv !== '') return { kind: 'token', token: checkAdminToken(fromEnv, ADMIN_TOKEN_ENV) };
  if (isLoopback(options.host)) return { kind: 'open' };
  return { kind: 'disabled', reason: `admin routes are disabled: the service listens on ${options.host} without an admin token; restart it with ${ADMIN_TOKEN_ENV} or --admin-token-file` };
}

/**
 * What `serve` says, loudly, when it listens beyond loopback without an auth file: every client
 * that reaches the port can read and write every object (#34 finding 9).
 */
export function exposureWarning(host: string, hasTokens: boolean): string | undefined {
  if (hasTokens || isLoopback(host)) return undefined;
  return `WARNING: shardkit serves on ${host} without an auth file: anyone who can reach this port can read and write every object. Give --auth-file (docs/security.md), or listen on 127.0.0.1.`;
}

function isWildcard(host: string): boolean {
  return host === '0.0.0.0' || host === '::' || host === '[::]';
}

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/** The config file in force: --config, else <data>/shardkit.json, written with the defaults on first start. */
export function ensureConfig(dataDir: string, configPath: string | undefined, log?: Logger): { path: string; config: ShardKitConfig } {
  if (configPath !== undefined) return { path: resolve(configPath), config: loadConfigFile(configPath) };
  const path = join(dataDir, 'shardkit.json');
  if (!existsSync(path)) {
    mkdirSync(dataDir, { recursive: true });
    // 'wx': two services started at once must not overwrite each other's first config.
    try {
      // Host names that say what they are (local001, not MySQL001A): a laptop has no MySQL.
      // Data dirs written before keep their own shardkit.json, and with it their host names.
      writeFileSync(path, `${JSON.stringify(defaultConfig({ hostNames: 'local' }), null, 2)}\n`, { flag: 'wx' });
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
async function openExtensions(config: ShardKitConfig, dataDir: string, options: ServeOptions, log: Logger, kit: ShardKit): Promise<Extension[]> {
  const out: Extension[] = [];
  try {
    if (options.widecolumn) {
      // The MyRocks engine follows the kit's shard map (the topology pushes it).
      let map = await kit.shardMap();
      kit.events.on('topology', (m: typeof map) => {
        map = m;
      });
      const fleet = {
        storage: config.storage, hosts: config.hosts, shardMap: () => map,
        refreshMap: async () => {
          map = await kit.refreshShardMap();
        },
      };
      const wc = await openWideColumnService({ dataDir, config: config.widecolumn, logger: log.child({ module: 'widecolumn' }), fleet });
      out.push({ plugin: widecolumnRoutes(wc.engine), close: () => wc.close() });
    } else {
      // The routes exist anyway and say that this service runs without the store.
      out.push({ plugin: widecolumnDisabledRoutes(), close: async () => {} });
    }
    if (config.tickets !== undefined) {
      const client = createTicketClient(config.tickets);
      out.push({ plugin: ticketsRoutes(client), close: () => client.close() });
    } else {
      // The routes exist anyway and say that ticket servers are not configured.
      out.push({ plugin: ticketsRoutes(), close: async () => {} });
    }
  } catch (err) {
    for (const e of out.reverse()) await e.close().catch(() => {});
    throw err;
  }
  return out;
}

/**
 * The topology watch's errors, logged: the service routes on by its last good map, and an operator
 * must hear why it no longer follows the store. Each different error at once; the same one again
 * at most once a minute (a down etcd is retried every few seconds).
 */
function topologyErrorLog(log: Logger): (err: unknown) => void {
  let last = '';
  let at = 0;
  return (err) => {
    const code = (err as { code?: unknown }).code;
    const text = err instanceof Error ? err.message : String(err);
    const now = Date.now();
    if (text === last && now - at < 60_000) return;
    last = text;
    at = now;
    log.warn({ code: typeof code === 'string' ? code : 'TOPOLOGY_UNAVAILABLE', err: text }, 'topology store: the service keeps routing by its last good shard map');
  };
}

export async function serve(options: ServeOptions): Promise<void> {
  const log = pino({ level: options.logLevel });
  const dataDir = resolve(options.data);
  const admin = adminAccess(options);
  const tokens = tokenSet(options, admin);
  const https = tlsOptions(options);
  const { path, config } = ensureConfig(dataDir, options.config, log);
  const kit = await ShardKit.open({ config, configPath: path, dataDir, onTopologyError: topologyErrorLog(log) });
  let extensions: Extension[] = [];
  try {
    extensions = await openExtensions(config, dataDir, options, log, kit);
  } catch (err) {
    await kit.close();
    throw err;
  }
  let app: Awaited<ReturnType<typeof buildApp>>;
  try {
    app = await buildApp({
      kit,
      loggerInstance: log,
      plugins: extensions.map((e) => e.plugin),
      admin,
      dashboard: options.dashboard,
      ...(tokens !== undefined ? { tokens } : {}),
      ...(https !== undefined ? { https } : {}),
      // DNS rebinding: without tokens, answer only loopback names and the address given. On a
      // wildcard address any of the machine's names may be in use (and exposureWarning warns).
      ...(isWildcard(options.host) ? {} : { hosts: [options.host] }),
      ...(options.bodyTimeout !== undefined ? { bodyTimeoutMs: options.bodyTimeout * 1000 } : {}),
      limits: {
        ...(options.rateLimit !== undefined ? { rateLimit: { max: options.rateLimit, windowMs: (options.rateWindow ?? 60) * 1000 } } : {}),
        ...(options.maxConcurrent !== undefined ? { maxConcurrent: options.maxConcurrent } : {}),
      },
    });
  } catch (err) {
    for (const e of extensions.reverse()) await e.close().catch(() => {});
    await kit.close();
    throw err;
  }
  // Token rotation without a restart: a file that no longer parses keeps the tokens in force.
  process.on('SIGHUP', () => {
    if (tokens === undefined) return log.info('SIGHUP: no --auth-file to reload');
    try {
      log.info({ tokens: tokens.reload() }, 'SIGHUP: reloaded the auth file');
    } catch (err) {
      log.error({ err: (err as Error).message }, 'SIGHUP: the auth file did not load; the previous tokens stay in force');
    }
  });
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
  const warning = exposureWarning(options.host, tokens !== undefined);
  if (warning !== undefined) {
    log.warn(warning);
    process.stderr.write(`${warning}\n`);
  }
  log.info({ config: path, dataDir, backend: kit.backend.kind, topologyVersion: (await kit.shardMap()).version, admin: tokens !== undefined ? 'tokens' : admin.kind, auth: tokens !== undefined ? `${tokens.size} tokens` : 'open', tls: https === undefined ? 'off' : https.requestCert === true ? 'client certificates' : 'on' }, 'shardkit serving');
}
