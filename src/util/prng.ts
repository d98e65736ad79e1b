/**
 * mulberry32: a small seeded PRNG (32 bits of state). The same seed gives the same sequence, so
 * a seeded run can be replayed: `shardkit demo seed --seed`, the HTTP model test. Uniform in
 * [0, 1) like Math.random; not for anything that must be unpredictable.
 */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
