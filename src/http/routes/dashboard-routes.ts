import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

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
  const files = new Map(Object.entries(FILES).map(([name, type]) => {
    const body = readFileSync(new URL(name, DIR));
    // A strong validator, so the browser's revalidation (no-cache) costs a 304, not the file.
    return [name, { type, body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"` }];
  }));
  return async (app: FastifyInstance): Promise<void> => {
    const send = (name: string) => async (request: FastifyRequest, reply: FastifyReply) => {
      const file = files.get(name)!;
      // Always revalidated (no-cache): a restarted, upgraded service serves its own files at once.
      reply.header('etag', file.etag).header('cache-control', 'no-cache');
      if (request.headers['if-none-match'] === file.etag) return reply.code(304).send();
      return reply
        .header('content-security-policy', DASHBOARD_CSP)
        .header('x-content-type-options', 'nosniff')
        .header('referrer-policy', 'no-referrer')
        .type(file.type)
        .send(file.body);
    };
    app.get('/', { schema: { hide: true } }, async (_request, reply) => reply.redirect('/dashboard/', 302));
    app.get('/dashboard', { schema: { hide: true } }, async (_request, reply) => reply.redirect('/dashboard/', 301));
    app.get('/dashboard/', { schema: { hide: true } }, send('index.html'));
    for (const name of files.keys()) app.get(`/dashboard/${name}`, { schema: { hide: true } }, send(name));
  };
}
