import { writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import type { ServeOptions } from '../actions/serve.js';
import { action, choiceOption, intOption } from '../run-action.js';

// pino's levels, checked here: pino itself refuses an unknown one with a message about custom levels.
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

// Only definitions here: fastify, SQLite and the other modules load when a command runs.
export function register(program: Command): void {
  program
    .command('openapi')
    .description('Print the OpenAPI 3 document of the HTTP API (every route serve can mount: objects, mappings, lookups, system, tickets, wide-column)')
    .option('--out <file>', 'write it to this file instead of stdout')
    .action(action(async (opts: { out?: string }) => {
      const { openapiDocument } = await import('../actions/openapi.js');
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
    .option('--log-level <level>', `pino log level (${LOG_LEVELS.join(', ')})`, choiceOption('--log-level', LOG_LEVELS), 'info')
    .option('--no-widecolumn', 'do not open the wide-column store (its routes then answer 501 WIDECOLUMN_DISABLED)')
    .option('--no-dashboard', 'do not serve the web dashboard at / and /dashboard/ (docs/dashboard.md)')
    .option('--admin-token-file <file>', 'file holding the token the /v1/admin/ routes require as "Authorization: Bearer <token>" (or set SHARDKIT_ADMIN_TOKEN); with --auth-file it is one more admin-scope token')
    .option('--auth-file <file>', 'token file (made by `shardkit auth token`): every /v1/ route then needs "Authorization: Bearer <token>" of a sufficient scope (or set SHARDKIT_AUTH_FILE); SIGHUP reloads it')
    .option('--tls-cert <file>', 'PEM certificate (chain): serve HTTPS (with --tls-key)')
    .option('--tls-key <file>', 'PEM private key of --tls-cert')
    .option('--tls-client-ca <file>', 'PEM CA bundle: require client certificates signed by it (mutual TLS)')
    .option('--rate-limit <n>', 'requests per client address per --rate-window; more get 429 with Retry-After (default: off)', intOption('--rate-limit', 1))
    .option('--rate-window <seconds>', 'the window of --rate-limit', intOption('--rate-window', 1, 86400), 60)
    .option('--body-timeout <seconds>', 'most seconds a request body may take to arrive after its headers; slower ones get 408 and their connection closed', intOption('--body-timeout', 1, 3600), 30)
    .option('--max-concurrent <n>', 'requests answered at once; more are shed with 503 OVERLOADED and Retry-After (default: off)', intOption('--max-concurrent', 1))
    .addHelpText('after', `
Security (docs/security.md): without --auth-file the data API is open to whoever reaches the port,
so --host defaults to loopback. With it, /v1/ routes need a token: read scope for GET and batch
reads, write for other data routes, admin for /v1/admin/; 401 without a known token, 403 with
too weak a scope. /healthz and /metrics stay open. Tokens are stored as SHA-256 hashes.

Admin routes (/v1/admin/: wide-column compaction, backups, exports) without --auth-file need the
admin token when one is set. Without a token they are open on a loopback --host and refused
(403) on any other.

The web dashboard (shard map, traffic, an object/mapping/lookup explorer) is at
http://<host>:<port>/ unless --no-dashboard.

Logs are JSON lines on stdout. SIGHUP reloads --auth-file (a file that no longer parses keeps the
old tokens and logs an error). SIGTERM or SIGINT stops accepting connections, finishes the
requests in flight, closes the shard files and exits 0.

Example:
  shardkit serve --data ./data --port 7070
  curl -s -X POST localhost:7070/v1/objects/user -H 'content-type: application/json' -d '{"data":{"name":"ann"}}'`)
    .action(action(async (opts: ServeOptions) => (await import('../actions/serve.js')).serve(opts)));
}
