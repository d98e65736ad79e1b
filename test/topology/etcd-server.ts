/**
 * A real etcd (Debian package etcd-server; scripts/install-test-deps.sh) for the etcd topology
 * store tests: one member on 127.0.0.1, free client and peer ports, its own temp data dir,
 * stopped by the test that started it. restart() reuses the ports and the data, like a server
 * coming back after a crash.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, openSync, closeSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pickFreePort } from '../../src/ops/free-port.js';
import { listensOn } from '../net/port-owner.js';

const started = new Set<ChildProcess>();
// A test that crashes must not leave servers behind.
process.once('exit', () => {
  for (const child of started) child.kill('SIGKILL');
});

async function healthy(port: number): Promise<boolean> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/health`, { signal: AbortSignal.timeout(1000) });
    return res.ok && ((await res.json()) as { health?: string }).health === 'true';
  } catch {
    return false;
  }
}

export class LocalEtcd {
  private child: ChildProcess | undefined;
  private exited: Promise<void> | undefined;
  clientPort = 0;
  peerPort = 0;

  private constructor(readonly dir: string) {}

  static async start(): Promise<LocalEtcd> {
    const server = new LocalEtcd(mkdtempSync(join(tmpdir(), 'shardkit-etcd-')));
    await server.restart();
    return server;
  }

  get endpoint(): string {
    return `http://127.0.0.1:${this.clientPort}`;
  }

  get log(): string {
    return join(this.dir, 'etcd.log');
  }

  /** Starts etcd (again, on the same ports and data when it ran before, so clients reconnect). */
  async restart(): Promise<void> {
    if (this.child) return;
    const fresh = this.clientPort === 0;
    for (let attempt = 0; attempt < 5; attempt++) {
      if (fresh) {
        this.clientPort = await pickFreePort();
        this.peerPort = await pickFreePort(new Set([this.clientPort]));
      }
      const client = `http://127.0.0.1:${this.clientPort}`;
      const peer = `http://127.0.0.1:${this.peerPort}`;
      const out = openSync(this.log, 'a');
      const child = spawn('etcd', [
        '--name', 'shardkit-test',
        '--data-dir', join(this.dir, 'data'),
        '--listen-client-urls', client, '--advertise-client-urls', client,
        '--listen-peer-urls', peer, '--initial-advertise-peer-urls', peer,
        '--initial-cluster', `shardkit-test=${peer}`, '--initial-cluster-state', 'new',
        '--logger', 'zap', '--log-outputs', 'stderr',
      ], { stdio: ['ignore', out, out] });
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
      for (let i = 0; i < 300 && !gone; i++) {
        // Our child, not merely some etcd, answers: one that lost its port exits, and the probe
        // must not take another test's etcd for it.
        if (await healthy(this.clientPort) && listensOn(child.pid!, this.clientPort)) {
          this.child = child;
          return;
        }
        await sleep(50);
      }
      if (spawnError) throw new Error(`cannot run etcd (${spawnError.message}): run scripts/install-test-deps.sh`);
      if (!gone) {
        child.kill('SIGKILL');
        await this.exited;
      }
      // Most likely a port was taken between picking and binding: try others (first start only).
      if (!fresh) break;
      rmSync(join(this.dir, 'data'), { recursive: true, force: true });
    }
    throw new Error(`etcd did not start; log ${this.log}:\n${safeRead(this.log)}`);
  }

  /** Stops etcd (SIGTERM, then SIGKILL), keeping its data for a restart. */
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
