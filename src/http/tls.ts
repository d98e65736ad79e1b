import type { ServerOptions } from 'node:https';

/**
 * TLS 1.2 suites with forward secrecy (ECDHE) and AEAD (GCM, ChaCha20-Poly1305) only: Mozilla's
 * "intermediate" list. Node's default list also accepts static-RSA and CBC-SHA1 suites such as
 * AES128-SHA (#34 finding 7). TLS 1.3 suites are all AEAD with forward secrecy and stay as Node
 * sets them (this option does not touch them).
 */
export const TLS12_CIPHERS = [
  'ECDHE-ECDSA-AES128-GCM-SHA256',
  'ECDHE-RSA-AES128-GCM-SHA256',
  'ECDHE-ECDSA-AES256-GCM-SHA384',
  'ECDHE-RSA-AES256-GCM-SHA384',
  'ECDHE-ECDSA-CHACHA20-POLY1305',
  'ECDHE-RSA-CHACHA20-POLY1305',
].join(':');

/** Strict-Transport-Security of every HTTPS answer: a year, the value HSTS preload lists ask for. */
export const HSTS = 'max-age=31536000';

/** The caller's https options over ours: TLS 1.2 or later, the suites above, the server's order. */
export function hardenedTls(options: ServerOptions): ServerOptions {
  return { minVersion: 'TLSv1.2', ciphers: TLS12_CIPHERS, honorCipherOrder: true, ...options };
}
