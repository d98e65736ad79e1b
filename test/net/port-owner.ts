/**
 * Whether a given process is the one listening on a TCP port (Linux /proc). A readiness probe that
 * only connects proves that *some* process listens: a test server that lost its port to another
 * process (taken between pickFreePort and the bind, or while the server was stopped for a restart)
 * then fails to bind and exits, while the probe connects to the other process and the test goes on
 * against a server that is not its own.
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

const LISTEN = '0A';

/** One TCP socket in LISTEN state: its local address (dotted IPv4, or `ipv6:` and the hex) and socket inode. */
export interface ListeningSocket {
  address: string;
  inode: string;
}

/** The sockets listening on `port` (any local address, IPv4 and IPv6), from /proc/net/tcp and tcp6. */
export function listeningSockets(port: number): ListeningSocket[] {
  const out: ListeningSocket[] = [];
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
      if (f.length <= 9 || f[3] !== LISTEN) continue;
      const [addr, portHex] = f[1]!.split(':');
      if (parseInt(portHex!, 16) !== port) continue;
      const address = addr!.length === 8 ? addr!.match(/../g)!.reverse().map((h) => parseInt(h, 16)).join('.') : `ipv6:${addr}`;
      out.push({ address, inode: f[9]! });
    }
  }
  return out;
}

/** True when process `pid` holds a socket listening on `port`. */
export function listensOn(pid: number, port: number): boolean {
  const inodes = new Set(listeningSockets(port).map((x) => x.inode));
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
