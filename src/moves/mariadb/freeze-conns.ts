import type { Conn } from './names.js';

export interface FreezeConns {
  /** Source master: app user, admin; target master: app user, admin; the fence's admin connections (fence domain). */
  src: Conn;
  srcAdmin: Conn;
  dst: Conn;
  dstAdmin: Conn;
  fence: Conn[];
}

export async function closeFreezeConns(k: FreezeConns): Promise<void> {
  await Promise.all([k.src, k.srcAdmin, k.dst, k.dstAdmin, ...k.fence].map((c) => c.end().catch(() => c.destroy())));
}
