import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const files = new Map<string, string>();

/**
 * An option file holding `password` for the MariaDB command-line tools (mariadb, mariadb-dump,
 * mariadb-binlog), given as their first argument `--defaults-extra-file=...`, so the password never
 * appears on a command line that `ps` shows every user. Written once per process and password,
 * readable by this user only (0600 in a 0700 directory), removed when the process exits.
 */
export function passwordOptionFile(password: string): string {
  const known = files.get(password);
  if (known !== undefined) return known;
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-client-'));
  const file = join(dir, 'client.cnf');
  // Option-file values in double quotes take backslash escapes.
  writeFileSync(file, `[client]\npassword="${password.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"\n`, { mode: 0o600 });
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  files.set(password, file);
  return file;
}
