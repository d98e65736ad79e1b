import { readFileSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';

/**
 * The dashboard's files, shipped in `dashboard/` at the package root (three levels up from this
 * file, in src/ and in dist/ alike). A fixed list read once at startup: a request names one of
 * these or gets 404, so no request text ever becomes a file path.
 */
const FILES: Record<string, string> = {
  'index.html': 'text/html; charset=utf-8',
  'dashboard.css': 'text/css; charset=utf-8',
  'dashboard.js': 'text/javascript; charset=utf-8',
  'dashboard-lib.js': 'text/javascript; charset=utf-8',
  'favicon.svg': 'image/svg+xml',
};

const DIR = new URL('../../../dashboard/', import.meta.url);

/**
 * Only this origin's scripts, styles and API; no inline code, no frames, no form posts (the
 * forms are handled by script): data shown by the page can never run as code.
 */
export const DASHBOARD_CSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/**
 * The web dashboard at /dashboard/ (and / redirects there): the shard map, traffic per route from
 * /metrics, and an explorer for objects, mappings and lookups, all read from the public API
 * (docs/dashboard.md). Not part of the API, so left out of the OpenAPI document.
 */
export function dashboardRoutes() {
  const files = new Map(Object.entries(FILES).map(([name, type]) => [name, { type, body: readFileSync(new URL(name, DIR)) }]));
  return async (app: FastifyInstance): Promise<void> => {
    const send = (name: string) => async (_request: unknown, reply: import('fastify').FastifyReply) => {
      const file = files.get(name)!;
      return reply
        .header('content-security-policy', DASHBOARD_CSP)
        .header('x-content-type-options', 'nosniff')
        .header('referrer-policy', 'no-referrer')
        // Always revalidated: a restarted (upgraded) service serves its own files at once.
        .header('cache-control', 'no-cache')
        .type(file.type)
        .send(file.body);
    };
    app.get('/', { schema: { hide: true } }, async (_request, reply) => reply.redirect('/dashboard/', 302));
    app.get('/dashboard', { schema: { hide: true } }, async (_request, reply) => reply.redirect('/dashboard/', 301));
    app.get('/dashboard/', { schema: { hide: true } }, send('index.html'));
    for (const name of files.keys()) app.get(`/dashboard/${name}`, { schema: { hide: true } }, send(name));
  };
}
