import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Runs `fn` with shell scripts standing in for the named programs (`mariadb-dump`, `mariadb`)
 * first on PATH, then puts PATH back and removes them. `fn` gets their folder.
 */
export async function withFakeBinaries<T>(scripts: Record<string, string>, fn: (bin: string) => Promise<T>): Promise<T> {
  const bin = mkdtempSync(join(tmpdir(), 'shardkit-fake-dump-'));
  const path = process.env.PATH;
  try {
    for (const [name, body] of Object.entries(scripts)) {
      writeFileSync(join(bin, name), `#!/bin/sh\n${body}`);
      chmodSync(join(bin, name), 0o755);
    }
    process.env.PATH = `${bin}:${path}`;
    return await fn(bin);
  } finally {
    process.env.PATH = path;
    rmSync(bin, { recursive: true, force: true });
  }
}
