/**
 * Real redis-server and memcached (Debian packages; scripts/install-test-deps.sh) for the cache
 * tests: each on 127.0.0.1, a free port and its own temp dir, stopped by the test that started it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, openSync, closeSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pickFreePort } from '../../src/ops/free-port.js';
import { listensOn } from '../net/port-owner.js';

export type CacheServerKind = 'redis' | 'memcached';

const started = new Set<ChildProcess>();
// A test that crashes must not leave servers behind.
process.once('exit', () => {
  for (const child of started) child.kill('SIGKILL');
});

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

export class LocalCacheServer {
  private child: ChildProcess | undefined;
  private exited: Promise<void> | undefined;

  private constructor(readonly kind: CacheServerKind, readonly dir: string, public port: number) {}

  static async start(kind: CacheServerKind): Promise<LocalCacheServer> {
    const server = new LocalCacheServer(kind, mkdtempSync(join(tmpdir(), `shardkit-${kind}-`)), 0);
    await server.restart();
    return server;
  }

  get log(): string {
    return join(this.dir, `${this.kind}.log`);
  }

  /** redis://127.0.0.1:port or 127.0.0.1:port. */
  get address(): string {
    return this.kind === 'redis' ? `redis://127.0.0.1:${this.port}` : `127.0.0.1:${this.port}`;
  }

  private args(): [string, string[]] {
    if (this.kind === 'redis') {
      return ['redis-server', ['--port', String(this.port), '--bind', '127.0.0.1', '--dir', this.dir, '--save', '', '--appendonly', 'no', '--daemonize', 'no', '--logfile', this.log]];
    }
    // memcached refuses to run as root unless told which user to be.
    const user = process.getuid?.() === 0 ? ['-u', userInfo().username] : [];
    return ['memcached', ['-l', '127.0.0.1', '-p', String(this.port), '-U', '0', '-m', '64', '-t', '1', ...user]];
  }

  /** Starts the server (again, on the same port when it had one, so clients reconnect). */
  async restart(): Promise<void> {
    if (this.child) return;
    for (let attempt = 0; attempt < 5; attempt++) {
      if (this.port === 0 || attempt > 0) this.port = await pickFreePort();
      const out = openSync(this.log, 'a');
      const [cmd, args] = this.args();
      const child = spawn(cmd, args, { stdio: ['ignore', out, out] });
      closeSync(out);
      started.add(child);
      let gone = false;
      let spawnError: Error | undefined;
      this.exited = new Promise((resolve) => {
        const done = (): void => {
          gone = true;
          started.delete(child);
          resolve();
        };
        child.once('exit', done);
        // ENOENT (package not installed) emits 'error' and no 'exit'.
        child.once('error', (err) => {
          spawnError = err;
          done();
        });
      });
      for (let i = 0; i < 200 && !gone; i++) {
        // Our child, not merely someone, on the port: one that lost the port exits, and the
        // probe must not take the other listener for it.
        if (await canConnect(this.port) && listensOn(child.pid!, this.port)) {
          this.child = child;
          return;
        }
        await sleep(50);
      }
      if (spawnError) throw new Error(`cannot run ${cmd} (${spawnError.message}): run scripts/install-test-deps.sh`);
      if (!gone) {
        child.kill('SIGKILL');
        await this.exited;
      }
      // Most likely the port was taken between picking and binding: try another.
    }
    throw new Error(`${this.kind} did not start; log ${this.log}:\n${safeRead(this.log)}`);
  }

  /** Stops the server (SIGTERM, then SIGKILL), keeping its dir for a restart. */
  async stop(): Promise<void> {
    const child = this.child;
    if (!child) return;
    this.child = undefined;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    await this.exited;
    clearTimeout(timer);
  }

  async destroy(): Promise<void> {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

function safeRead(path: string): string {
  try {
    return readFileSync(path, 'utf8').slice(-2000);
  } catch {
    return '(no log)';
  }
}
