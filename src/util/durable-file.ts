import { closeSync, fsyncSync, openSync } from 'node:fs';

/**
 * fsync of a file (before it is renamed into place) or of a directory (after, so the rename itself
 * survives a power loss). Without them a crash of the machine can leave a complete name over a
 * short or empty file: for a backup, a manifest that names data that is not on disk.
 */
export function syncPath(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
