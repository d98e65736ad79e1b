import { readFileSync } from 'node:fs';

/** Kernel TCP states (include/net/tcp_states.h) a socket the server still holds is in. */
const HELD = new Map([['01', 'ESTABLISHED'], ['03', 'SYN_RECV'], ['08', 'CLOSE_WAIT'], ['09', 'LAST_ACK']]);

/**
 * The server side of every TCP connection to `port` as the kernel lists it (/proc/net/tcp and
 * tcp6), by state: what is open whatever the server's own bookkeeping says (#34: a socket left in
 * CLOSE-WAIT is one the process forgot, and server.getConnections counts only the ones it knows).
 * TIME_WAIT and the listening socket are not held by anyone and are left out.
 */
export function heldSockets(port: number): Record<string, number> {
  const out: Record<string, number> = {};
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 4) continue;
      const state = HELD.get(f[3]!);
      if (state === undefined || !f[1]!.endsWith(`:${hexPort}`)) continue;
      out[state] = (out[state] ?? 0) + 1;
    }
  }
  return out;
}

export function heldCount(port: number): number {
  return Object.values(heldSockets(port)).reduce((a, b) => a + b, 0);
}
