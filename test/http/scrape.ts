/** The value of one series of a Prometheus text scrape, found by name and exact label set (NaN when absent). */
export function scrapeValue(body: string, name: string, labels: Record<string, string> = {}): number {
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`).sort().join(',');
  for (const line of body.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (m === null || m[1] !== name) continue;
    const got = (m[2] ?? '').split(/,(?=[a-zA-Z_]+=")/).filter((l) => l !== '').sort().join(',');
    if (got === wanted) return Number(m[3]);
  }
  return NaN;
}
