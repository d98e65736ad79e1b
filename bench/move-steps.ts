import type { TopologyStore } from '../src/topology/topology-store.js';

/**
 * Where a move's time goes, for the move benches: each engine step (the engines' onStep option)
 * and each compare-and-set on the topology store (`topology CAS #n`, numbered in order), summed
 * by name until stop(). lines() gives the table the benches print.
 */
export function moveSteps(store: TopologyStore): { note: (name: string, ms: number) => void; stop: () => void; lines: (title: string) => string[] } {
  const steps = new Map<string, { ms: number; n: number }>();
  let recording = true;
  const note = (name: string, ms: number) => {
    if (!recording) return;
    const x = steps.get(name) ?? { ms: 0, n: 0 };
    steps.set(name, { ms: x.ms + ms, n: x.n + 1 });
  };
  const write = store.write.bind(store);
  let casSeq = 0;
  store.write = async (...args: Parameters<typeof store.write>) => {
    const t0 = performance.now();
    try {
      return await write(...args);
    } finally {
      note(`topology CAS #${++casSeq}`, performance.now() - t0);
    }
  };
  const lines = (title: string) => [
    `| ${title} | ms | calls |`, '| --- | ---: | ---: |',
    ...[...steps].map(([name, x]) => `| ${name} | ${name.endsWith('(count)') ? x.ms : x.ms.toFixed(1)} | ${x.n} |`),
  ];
  return { note, stop: () => (recording = false), lines };
}
