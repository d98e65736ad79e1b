import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import { ShardKitError } from '../../errors.js';

/** Paths of the MariaDB programs the local cluster runs. */
export interface MariadbBinaries {
  mariadbd: string;
  installDb: string;
}

// Debian puts mariadbd in /usr/sbin, which is not on a normal user's PATH.
const EXTRA_DIRS = ['/usr/sbin', '/usr/local/sbin', '/usr/bin', '/usr/local/bin', '/usr/local/mysql/bin'];

function findProgram(names: string[]): string | undefined {
  const dirs = [...(process.env.PATH ?? '').split(delimiter).filter(Boolean), ...EXTRA_DIRS];
  for (const name of names) {
    for (const dir of dirs) {
      const p = join(dir, name);
      try {
        accessSync(p, constants.X_OK);
        return p;
      } catch {
        // not here
      }
    }
  }
  return undefined;
}

/** An explicit path (env override) wins when set; when set but unusable, nothing else is tried. */
function executable(path: string | undefined): string | undefined | null {
  if (path === undefined || path === '') return undefined;
  try {
    accessSync(path, constants.X_OK);
    return path;
  } catch {
    return null;
  }
}

let cached: MariadbBinaries | undefined;

/**
 * Finds mariadbd and mariadb-install-db (MARIADBD / MARIADB_INSTALL_DB override the search).
 * Missing programs are MISSING_DEPENDENCY with the Debian package that provides them.
 */
export function findMariadbBinaries(): MariadbBinaries {
  if (cached && !process.env.MARIADBD && !process.env.MARIADB_INSTALL_DB) return cached;
  const explicitD = executable(process.env.MARIADBD);
  const mariadbd = explicitD === null ? undefined : explicitD ?? findProgram(['mariadbd', 'mysqld']);
  if (!mariadbd) {
    throw new ShardKitError('MISSING_DEPENDENCY', 'mariadbd not found: install the Debian package mariadb-server (apt-get install mariadb-server mariadb-client)');
  }
  const explicitI = executable(process.env.MARIADB_INSTALL_DB);
  const installDb = explicitI === null ? undefined : explicitI ?? findProgram(['mariadb-install-db', 'mysql_install_db']);
  if (!installDb) {
    throw new ShardKitError('MISSING_DEPENDENCY', 'mariadb-install-db not found: install the Debian package mariadb-server (apt-get install mariadb-server mariadb-client)');
  }
  cached = { mariadbd, installDb };
  return cached;
}
