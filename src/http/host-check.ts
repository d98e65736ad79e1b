import { isIP } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { ShardKitError } from '../errors.js';

/** Names that always mean this machine (RFC 6761 reserves `localhost` and its subdomains). */
export function isLoopbackName(host: string): boolean {
  const h = host.toLowerCase();
  return h === 'localhost' || h.endsWith('.localhost') || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/** The host name of a Host header, without its port and IPv6 brackets; undefined when unparseable. */
export function hostName(header: string): string | undefined {
  const m = /^\[([0-9a-fA-F:.]+)\](?::\d{1,5})?$/.exec(header);
  if (m !== null) return isIP(m[1]!) === 6 ? m[1]!.toLowerCase() : undefined;
  const n = /^([A-Za-z0-9.-]+)(?::\d{1,5})?$/.exec(header);
  return n === null ? undefined : n[1]!.toLowerCase().replace(/\.$/, '');
}

/**
 * DNS rebinding (#34 finding 5): a web page whose name the attacker points at 127.0.0.1 reaches
 * an open loopback service from the operator's browser, as its own origin, so neither CORS nor
 * the JSON-only rule stops it. The browser still sends the attacker's name as Host: a service
 * without tokens answers only Host names that are loopback or one of `allowed` (the address it
 * listens on), and refuses the rest with 421 HOST_NOT_ALLOWED before any route runs.
 */
export function installHostCheck(app: FastifyInstance, allowed: readonly string[]): void {
  const names = new Set(allowed.map((h) => hostName(h.includes(':') && !h.startsWith('[') ? `[${h}]` : h) ?? h.toLowerCase()));
  app.addHook('onRequest', (request, _reply, done) => {
    const header = request.headers.host;
    // HTTP/1.0 clients may send none; browsers always do.
    if (header === undefined) return done();
    const name = hostName(header);
    if (name !== undefined && (isLoopbackName(name) || names.has(name))) return done();
    done(new ShardKitError('HOST_NOT_ALLOWED', `this service answers requests to ${['localhost', ...names].join(', ')} only, not ${JSON.stringify(header.slice(0, 100))} (a page elsewhere reaching it by DNS rebinding); give it an auth file to serve other names (docs/security.md)`));
  });
}
