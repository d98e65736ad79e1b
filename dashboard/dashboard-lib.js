// @ts-check
/**
 * The dashboard's logic without a DOM: ID decoding, the Prometheus text format, request rates and
 * latency quantiles. Imported by dashboard.js in the browser and by the tests in Node.
 */

const U64 = (1n << 64n) - 1n;

/**
 * The fields of a Pinterest-layout ID (SPEC §1): 2 reserved bits, 16-bit shard, 10-bit type,
 * 36-bit local id. Mirrors src/ids/pinterest-id.ts for display; the service stays the judge.
 * @param {string} text
 * @returns {{ ok: true, id: string, shard: number, typeId: number, localId: string } | { ok: false, error: string }}
 */
export function decodePinterestId(text) {
  const t = text.trim();
  if (!/^[0-9]{1,20}$/.test(t)) return { ok: false, error: 'an ID is an unsigned decimal integer' };
  const id = BigInt(t);
  if (id > U64) return { ok: false, error: 'over 64 bits' };
  if (id >> 62n !== 0n) return { ok: false, error: 'reserved high bits set' };
  return { ok: true, id: id.toString(), shard: Number((id >> 46n) & 0xffffn), typeId: Number((id >> 36n) & 0x3ffn), localId: (id & 0xfffffffffn).toString() };
}

/**
 * One URL path segment, percent-encoded. A segment that is exactly "." or ".." cannot be sent:
 * URL parsers (browsers, fetch) remove dot segments, and by the URL standard "%2E%2E" counts as
 * one too, so "/v1/lookups/email/.." would become "/v1/lookups/". Those two are refused here
 * rather than turned into a request for another URL.
 * @param {string} text
 * @returns {{ ok: true, segment: string } | { ok: false, error: string }}
 */
export function pathSegment(text) {
  if (text === '.' || text === '..') return { ok: false, error: `"${text}" cannot be sent in a URL path (browsers remove dot segments): use the library or a client such as curl with %2E` };
  return { ok: true, segment: encodeURIComponent(text) };
}

/**
 * Samples of the Prometheus text exposition format (what /metrics serves); comments skipped.
 * @param {string} text
 * @returns {Array<{ name: string, labels: Record<string, string>, value: number }>}
 */
export function parsePrometheus(text) {
  /** @type {Array<{ name: string, labels: Record<string, string>, value: number }>} */
  const out = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    /** @type {Record<string, string>} */
    const labels = {};
    const body = m[2] ?? '';
    const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
    for (let l = re.exec(body); l !== null; l = re.exec(body)) {
      labels[/** @type {string} */ (l[1])] = /** @type {string} */ (l[2]).replace(/\\(.)/g, (_, c) => (c === 'n' ? '\n' : c));
    }
    const value = m[3] === '+Inf' ? Infinity : m[3] === '-Inf' ? -Infinity : Number(m[3]);
    out.push({ name: /** @type {string} */ (m[1]), labels, value });
  }
  return out;
}

/**
 * The q-quantile of a histogram from its cumulative buckets, interpolated inside the bucket as
 * Prometheus' histogram_quantile does; undefined without observations.
 * @param {Array<{ le: number, count: number }>} buckets cumulative, any order, +Inf included
 * @param {number} q
 */
export function histogramQuantile(buckets, q) {
  const sorted = [...buckets].sort((a, b) => a.le - b.le);
  const total = sorted.length > 0 ? /** @type {{ count: number }} */ (sorted[sorted.length - 1]).count : 0;
  if (total === 0) return undefined;
  const rank = q * total;
  let lower = 0;
  let below = 0;
  for (const b of sorted) {
    if (b.count >= rank) {
      // Past the last finite bound the best answer is that bound.
      if (b.le === Infinity) return lower;
      const inBucket = b.count - below;
      return inBucket === 0 ? b.le : lower + ((b.le - lower) * (rank - below)) / inBucket;
    }
    lower = b.le;
    below = b.count;
  }
  return lower;
}

/**
 * @typedef {{ method: string, route: string, total: number, clientErrors: number, serverErrors: number, rate: number | undefined, p50: number | undefined, p99: number | undefined }} RouteTraffic
 */

/**
 * Requests per route from two scrapes of /metrics `seconds` apart: totals, 4xx and 5xx counts,
 * the request rate between the scrapes (undefined on the first), and latency quantiles.
 * Routes without requests are left out; the busiest come first.
 * @param {ReturnType<typeof parsePrometheus>} samples
 * @param {Map<string, number> | undefined} previous totals by "METHOD route" from the last call
 * @param {number} seconds
 * @returns {{ routes: RouteTraffic[], totals: Map<string, number> }}
 */
export function routeTraffic(samples, previous, seconds) {
  /** @type {Map<string, RouteTraffic>} */
  const byRoute = new Map();
  /** @type {Map<string, Array<{ le: number, count: number }>>} */
  const buckets = new Map();
  const entry = (/** @type {Record<string, string>} */ labels) => {
    const key = `${labels.method} ${labels.route}`;
    let e = byRoute.get(key);
    if (e === undefined) byRoute.set(key, (e = { method: labels.method ?? '', route: labels.route ?? '', total: 0, clientErrors: 0, serverErrors: 0, rate: undefined, p50: undefined, p99: undefined }));
    return e;
  };
  for (const s of samples) {
    if (s.name === 'shardkit_http_requests_total') {
      const e = entry(s.labels);
      e.total += s.value;
      const status = Number(s.labels.status);
      if (status >= 500) e.serverErrors += s.value;
      else if (status >= 400) e.clientErrors += s.value;
    } else if (s.name === 'shardkit_http_request_duration_seconds_bucket') {
      const key = `${s.labels.method} ${s.labels.route}`;
      const list = buckets.get(key) ?? [];
      list.push({ le: s.labels.le === '+Inf' ? Infinity : Number(s.labels.le), count: s.value });
      buckets.set(key, list);
    }
  }
  /** @type {Map<string, number>} */
  const totals = new Map();
  for (const [key, e] of byRoute) {
    totals.set(key, e.total);
    const before = previous?.get(key);
    if (previous !== undefined && seconds > 0) e.rate = Math.max(0, e.total - (before ?? 0)) / seconds;
    const b = buckets.get(key);
    if (b !== undefined) {
      e.p50 = histogramQuantile(b, 0.5);
      e.p99 = histogramQuantile(b, 0.99);
    }
  }
  const routes = [...byRoute.values()].filter((e) => e.total > 0).sort((a, b) => b.total - a.total || a.route.localeCompare(b.route));
  return { routes, totals };
}

/**
 * The sum of a counter's samples over all its labels, or undefined when the metric is absent (a
 * service without a cache has no cache counters).
 * @param {ReturnType<typeof parsePrometheus>} samples
 * @param {string} name
 */
export function counterValue(samples, name) {
  let found = false;
  let sum = 0;
  for (const s of samples) {
    if (s.name === name) {
      found = true;
      sum += s.value;
    }
  }
  return found ? sum : undefined;
}

/**
 * @param {number | undefined} seconds
 */
export function formatDuration(seconds) {
  if (seconds === undefined || !Number.isFinite(seconds)) return '–';
  if (seconds < 0.001) return `${Math.round(seconds * 1e6)} µs`;
  if (seconds < 1) return `${(seconds * 1000).toFixed(seconds < 0.01 ? 2 : 1)} ms`;
  return `${seconds.toFixed(2)} s`;
}

/**
 * Bytes as on the CLI's progress bar (src/ops/progress.ts formatBytes): 512 B, 12.3 KiB, 4.0 MiB.
 * @param {number} n
 */
export function formatBytes(n) {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  const i = n <= 0 ? 0 : Math.min(units.length - 1, Math.floor(Math.log2(n) / 10));
  return i === 0 ? `${n} B` : `${(n / 2 ** (10 * i)).toFixed(1)} ${units[i]}`;
}

/**
 * @param {number | undefined} perSecond
 */
export function formatRate(perSecond) {
  if (perSecond === undefined) return '–';
  return perSecond >= 100 ? `${Math.round(perSecond).toLocaleString('en-US')}/s` : `${perSecond.toFixed(1)}/s`;
}

/**
 * A mapping's sequence shown as a time when it looks like unix milliseconds (the default
 * sequence), else as the number itself.
 * @param {number} sequence
 */
export function describeSequence(sequence) {
  // 2001-09-09 .. 2286-11-20 in ms: what Date.now() gave when the pair was added.
  if (Number.isSafeInteger(sequence) && sequence >= 1e12 && sequence < 1e13) return new Date(sequence).toISOString();
  return String(sequence);
}

/**
 * Shard ranges of a shard map summed up: shards, open shards, hosts.
 * @param {{ ranges: Array<{ range: [number, number], master: string, slave?: string, open?: boolean }> }} map
 */
export function summarizeMap(map) {
  let shards = 0;
  let open = 0;
  const hosts = new Set();
  for (const r of map.ranges) {
    const n = r.range[1] - r.range[0] + 1;
    shards += n;
    if (r.open === true) open += n;
    hosts.add(r.master);
    if (r.slave !== undefined) hosts.add(r.slave);
  }
  return { shards, open, hosts: hosts.size };
}

/** Past this many ranges the shard map table shows one row per master (a map at moon size). */
export const SUMMARY_AFTER_RANGES = 200;

/**
 * The object ranges summed up by master, in master order: how many ranges and shards each pair
 * serves, how many are open, its first and last shard, and the moves freezing its ranges.
 * @param {Array<{ range: [number, number], master: string, slave?: string, open?: boolean, frozen?: { id: string } }>} ranges
 */
export function rangesByMaster(ranges) {
  /** @type {Map<string, { master: string, slave: string | undefined, ranges: number, shards: number, open: number, first: number, last: number, frozenBy: string[] }>} */
  const rows = new Map();
  for (const r of ranges) {
    const n = r.range[1] - r.range[0] + 1;
    let row = rows.get(r.master);
    if (row === undefined) rows.set(r.master, (row = { master: r.master, slave: r.slave, ranges: 0, shards: 0, open: 0, first: r.range[0], last: r.range[1], frozenBy: [] }));
    row.ranges++;
    row.shards += n;
    if (r.open === true) row.open += n;
    row.first = Math.min(row.first, r.range[0]);
    row.last = Math.max(row.last, r.range[1]);
    if (r.frozen !== undefined) row.frozenBy.push(r.frozen.id);
  }
  return [...rows.values()].sort((a, b) => (a.master < b.master ? -1 : a.master > b.master ? 1 : 0));
}

/**
 * @typedef {{ shard: number, reads: number, writes: number, rate: number | undefined, objects: number | null }} HeatCell
 * @typedef {{ range: [number, number], frozenBy: string | undefined, cells: HeatCell[], calls: number, rate: number | undefined, objects: number | null }} HeatRange
 * @typedef {{ host: string, ranges: HeatRange[], calls: number, rate: number | undefined, objects: number | null }} HeatHost
 */

/**
 * The heat map's layout from GET /v1/admin/shards/stats: shards grouped by master host, then by
 * the map's ranges, with sums per range and host. Cells are coloured by calls per second when the
 * service has a rate and some shard had calls in it (`byRate`), else (first look, or an idle
 * service) by calls since it started; `max` is the top of that scale.
 * @param {{ ranges: Array<{ range: [number, number], master: string, frozenBy?: string, reads: number[], writes: number[], rates: number[] | null, objects: Array<number | null> }> }} stats
 * @returns {{ hosts: HeatHost[], byRate: boolean, max: number }}
 */
export function heatGroups(stats) {
  /** @type {Map<string, HeatHost>} */
  const hosts = new Map();
  const hasRate = stats.ranges.some((r) => r.rates !== null);
  let maxRate = 0;
  let maxCalls = 0;
  /** @param {number | null} a @param {number | null} b */
  const addObjects = (a, b) => (a === null ? b : b === null ? a : a + b);
  for (const r of stats.ranges) {
    /** @type {HeatCell[]} */
    const cells = r.reads.map((reads, i) => ({
      shard: r.range[0] + i,
      reads,
      writes: r.writes[i] ?? 0,
      rate: r.rates === null ? undefined : r.rates[i],
      objects: r.objects[i] ?? null,
    }));
    /** @type {HeatRange} */
    const range = { range: r.range, frozenBy: r.frozenBy, cells, calls: 0, rate: hasRate ? 0 : undefined, objects: null };
    for (const c of cells) {
      range.calls += c.reads + c.writes;
      if (range.rate !== undefined) range.rate += c.rate ?? 0;
      range.objects = addObjects(range.objects, c.objects);
      maxRate = Math.max(maxRate, c.rate ?? 0);
      maxCalls = Math.max(maxCalls, c.reads + c.writes);
    }
    let host = hosts.get(r.master);
    if (host === undefined) hosts.set(r.master, (host = { host: r.master, ranges: [], calls: 0, rate: hasRate ? 0 : undefined, objects: null }));
    host.ranges.push(range);
    host.calls += range.calls;
    if (host.rate !== undefined) host.rate += range.rate ?? 0;
    host.objects = addObjects(host.objects, range.objects);
  }
  const byRate = maxRate > 0;
  return { hosts: [...hosts.values()], byRate, max: byRate ? maxRate : maxCalls };
}

/**
 * A cell's colour step, 0 (no calls) to 5 (the hottest shard shown). The square root spreads
 * the low end, where most shards of a skewed load are.
 * @param {number} value
 * @param {number} max
 */
export function heatLevel(value, max) {
  if (!(max > 0) || !(value > 0)) return 0;
  return Math.min(5, Math.max(1, Math.ceil(5 * Math.sqrt(value / max))));
}

/**
 * The `n` busiest shards of the heat map: by rate when there is one, then by calls since start.
 * @param {{ hosts: HeatHost[] }} groups
 * @param {number} n
 * @returns {Array<HeatCell & { host: string }>}
 */
export function hottestShards(groups, n) {
  const all = groups.hosts.flatMap((h) => h.ranges.flatMap((r) => r.cells.map((c) => ({ ...c, host: h.host }))));
  return all
    .filter((c) => c.reads + c.writes > 0)
    .sort((a, b) => (b.rate ?? 0) - (a.rate ?? 0) || b.reads + b.writes - (a.reads + a.writes) || a.shard - b.shard)
    .slice(0, n);
}

/**
 * @typedef {{ phase: string, shardsDone?: number, shardsTotal?: number, rowsCopied?: number, rowsTotal?: number, bytesCopied?: number, step?: string, verifiedTables?: number, verifyTables?: number, rowsPerSecond?: number, bytesPerSecond?: number, etaSeconds?: number, tables?: Array<{ table: string, rowsCopied: number, bytesCopied: number }>, lag?: number, at: number }} MoveProgressRecord
 */

/**
 * The tables a move is copying now (one per copy stream), one line each, as the moves table
 * lists them under the move's progress; none when the record is of another phase.
 * @param {{ phase: string, progress?: MoveProgressRecord }} move
 * @returns {string[]}
 */
export function moveTables(move) {
  const p = move.progress;
  if (p === undefined || p.phase !== move.phase || p.tables === undefined) return [];
  return p.tables.map((t) => `${t.table}: ${t.rowsCopied.toLocaleString('en-US')} rows, ${formatBytes(t.bytesCopied)}`);
}

/** Whole seconds as `42 s`, `3 min 20 s` or `2 h 5 min` (an ETA). @param {number} s */
export function formatSeconds(s) {
  const n = Math.max(0, Math.round(s));
  if (n < 60) return `${n} s`;
  if (n < 3600) return `${Math.floor(n / 60)} min ${n % 60} s`;
  return `${Math.floor(n / 3600)} h ${Math.floor((n % 3600) / 60)} min`;
}

/**
 * What the moves table shows of a move's progress (written by the mover, docs/moves.md): the
 * numbers of the phase the move is in now, or dashes when the mover has reported none for it.
 * @param {{ phase: string, progress?: MoveProgressRecord }} move
 * @param {number} now wall-clock ms
 * @returns {{ progress: string, lag: string, updated: string }}
 */
export function moveProgress(move, now) {
  const p = move.progress;
  if (p === undefined || p.phase !== move.phase) return { progress: '–', lag: '–', updated: '–' };
  const parts = [];
  const pct = (done, total) => (total > 0 ? ` (${Math.min(100, Math.floor((done / total) * 100))}%)` : '');
  if (p.shardsDone !== undefined) parts.push(`${p.shardsDone}${p.shardsTotal !== undefined ? `/${p.shardsTotal}` : ''} shards${p.shardsTotal !== undefined && p.rowsTotal === undefined ? pct(p.shardsDone, p.shardsTotal) : ''}`);
  if (p.rowsCopied !== undefined) parts.push(`${p.rowsCopied.toLocaleString('en-US')}${p.rowsTotal !== undefined ? `/${p.rowsTotal.toLocaleString('en-US')}` : ''} rows${p.rowsTotal !== undefined ? pct(p.rowsCopied, p.rowsTotal) : ''}`);
  if (p.bytesCopied !== undefined) parts.push(`${formatBytes(p.bytesCopied)} copied`);
  if (p.verifyTables !== undefined) parts.push(`${p.step === 'settling' ? 'settled' : 'verified'} ${(p.verifiedTables ?? 0).toLocaleString('en-US')}/${p.verifyTables.toLocaleString('en-US')} tables${pct(p.verifiedTables ?? 0, p.verifyTables)}`);
  if (p.rowsPerSecond !== undefined) parts.push(`${Math.round(p.rowsPerSecond).toLocaleString('en-US')} rows/s${p.bytesPerSecond !== undefined ? ` (${formatBytes(p.bytesPerSecond)}/s)` : ''}`);
  if (p.etaSeconds !== undefined) parts.push(`ETA ${formatSeconds(p.etaSeconds)}`);
  const age = Math.max(0, Math.round((now - p.at) / 1000));
  return { progress: parts.length > 0 ? parts.join(', ') : '–', lag: p.lag === undefined ? '–' : String(p.lag), updated: `${age} s ago` };
}

/**
 * A move's phase as the moves table names it: what the mover is doing in it (docs/moves.md), not
 * the phase it has finished ("started" is the copy, "copied" the lag gate and, on PostgreSQL, the
 * verify before the freeze, "fenced" the catch-up, verify and switch under the freeze).
 * @param {string} phase
 */
export function movePhaseLabel(phase) {
  return ({ started: 'copying', copied: 'catching up', frozen: 'frozen', fenced: 'fenced: verifying', switched: 'switched', aborting: 'aborting' })[phase] ?? phase;
}

/**
 * What the mover does right now, from the step it last reported inside the move's phase (#28:
 * `copied` holds the lag gate, the verify before the freeze, the settle and the services' gate),
 * else the phase's name (movePhaseLabel).
 * @param {{ phase: string, progress?: { phase: string, step?: string } }} move
 */
export function moveStepLabel(move) {
  const step = move.progress?.phase === move.phase ? move.progress.step : undefined;
  const fenced = move.phase === 'frozen' || move.phase === 'fenced';
  const label = {
    copying: 'copying',
    lag: 'lag gate: catching up',
    verifying: fenced ? 'fenced: verifying' : 'verifying before the freeze',
    settling: 'settling hot chunks',
    services: 'waiting for services',
    admission: 'admission: measuring the freeze',
    'catching-up': 'fenced: catching up',
  }[step ?? ''];
  return label ?? movePhaseLabel(move.phase);
}
