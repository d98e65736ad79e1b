/**
 * Whether a given process is the one listening on a TCP port (Linux /proc). A readiness probe that
 * only connects proves that *some* process listens: a test server that lost its port to another
 * process (taken between pickFreePort and the bind, or while the server was stopped for a restart)
 * then fails to bind and exits, while the probe connects to the other process and the test goes on
 * against a server that is not its own.
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

const LISTEN = '0A';

/** Socket inodes in LISTEN state on `port` (any local address, IPv4 and IPv6). */
function listeningInodes(port: number): Set<string> {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  const inodes = new Set<string>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
      const f = line.trim().split(/\s+/);
      if (f.length > 9 && f[1]!.endsWith(`:${hexPort}`) && f[3] === LISTEN) inodes.add(f[9]!);
    }
  }
  return inodes;
}

/** True when process `pid` holds a socket listening on `port`. */
export function listensOn(pid: number, port: number): boolean {
  const inodes = listeningInodes(port);
  if (inodes.size === 0) return false;
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return false;
  }
  for (const fd of fds) {
    let target: string;
    try {
      target = readlinkSync(`/proc/${pid}/fd/${fd}`);
    } catch {
      continue;
    }
    const m = /^socket:\[(\d+)\]$/.exec(target);
    if (m && inodes.has(m[1]!)) return true;
  }
  return false;
}
