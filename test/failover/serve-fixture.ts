import { spawn, type ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { CLI, ensureBuilt } from '../cli/cli-harness.js';
import { newLedger, type Ledger } from './ledger.js';

ensureBuilt();

export interface Service {
  proc: ChildProcess;
  url: string;
  stop(): Promise<void>;
}

/** A real `shardkit serve` process on the config, on a free port. */
export async function startService(configPath: string, dataDir: string, options: { widecolumn?: boolean } = {}): Promise<Service> {
  const proc = spawn(process.execPath, [CLI, 'serve', '--config', configPath, '--data', dataDir, '--port', '0', ...(options.widecolumn ? [] : ['--no-widecolumn']), '--no-dashboard'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    proc.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const m = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (m) resolve(m[1]!);
    });
    proc.stderr!.on('data', (c: Buffer) => (out += c.toString()));
    void exited.then((code) => reject(new Error(`serve exited with ${code}: ${out}`)));
  });
  // Only the first lines matter: keep the pipes drained without holding the logs.
  proc.stdout!.removeAllListeners('data');
  proc.stdout!.resume();
  return {
    proc,
    url,
    async stop() {
      if (proc.exitCode !== null) return;
      proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** HTTP writers (per service) creating pins on `shards` until `until`; 503s are retried. */
export async function httpWriteLoad(services: Service[], shards: number[], until: Promise<void>, writers = 2, ledger: Ledger = newLedger()): Promise<Ledger> {
  let stop = false;
  void until.then(() => (stop = true));
  let n = 0;
  await Promise.all(services.flatMap((s) => Array.from({ length: writers }, async () => {
    let failingSince: number | undefined;
    let lastAck: number | undefined;
    let gap = 0;
    while (!stop) {
      const k = n++;
      let code: string;
      try {
        const res = await fetch(`${s.url}/v1/objects/pin`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ data: { k }, shard: shards[k % shards.length] }) });
        const body = await res.text();
        if (res.status === 201) {
          const at = Date.now();
          ledger.acked.push({ id: BigInt((JSON.parse(body) as { id: string }).id), at });
          if (lastAck !== undefined) gap = Math.max(gap, at - lastAck);
          lastAck = at;
          if (failingSince !== undefined) ledger.pauses.push(Date.now() - failingSince);
          failingSince = undefined;
          continue;
        }
        code = `${res.status} ${body.slice(0, 80)}`;
      } catch (err) {
        code = (err as Error).message;
      }
      ledger.errors.set(code, (ledger.errors.get(code) ?? 0) + 1);
      failingSince ??= Date.now();
      await sleep(10);
    }
    ledger.gaps.push(gap);
  })));
  return ledger;
}
