// @ts-check
/**
 * The dashboard: the shard map, traffic per route, and an explorer for objects, mappings and
 * lookups, all read from this service's public HTTP API. Data only ever reaches the page as
 * text (textContent), never as markup. The location hash holds what is being explored
 * (#object=…, #mapping=…&from=…, #lookup=…&key=…), so links and the back button work.
 */
import {
  counterValue, decodePinterestId, describeSequence, formatDuration, formatRate, heatGroups, heatLevel, hottestShards, moveProgress, moveStepLabel, moveTables, parsePrometheus, pathSegment, rangesByMaster, routeTraffic, summarizeMap, SUMMARY_AFTER_RANGES,
} from './dashboard-lib.js';

const REFRESH_MS = 5000;
const PAGE = 20;

/** @type {{ types: Array<{ name: string, id: number }>, mappings: Array<{ name: string, from: string, to: string }>, keyspaces: Array<{ name: string }> } | undefined} */
let schema;
/** @type {Map<string, number> | undefined} */
let previousTotals;
let previousAt = 0;

/**
 * @param {string} id
 * @returns {HTMLElement}
 */
function $(id) {
  const e = document.getElementById(id);
  if (e === null) throw new Error(`#${id} missing`);
  return e;
}

/**
 * An element with attributes and children (strings become text nodes).
 * @param {string} tag
 * @param {Record<string, string>} [attrs]
 * @param {Array<Node | string>} children
 */
function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  for (const c of children) e.append(c);
  return e;
}

/** @param {Record<string, string>} params */
function hashLink(params, text) {
  return el('a', { href: `#${new URLSearchParams(params)}`, class: 'mono' }, text);
}

class ApiError extends Error {
  /** @param {number} status @param {string} code @param {string} message */
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/**
 * Where the bearer token typed into the dashboard is kept: session storage only, so it is gone
 * when the tab closes and never written to disk by us (docs/security.md).
 */
const TOKEN_KEY = 'shardkit.token';

/** How long a call may take before the service counts as not answering. */
const TIMEOUT_MS = 4000;

/**
 * GET a path of this service: the parsed body (JSON or text) and the response headers, or an
 * ApiError with the service's code and message. Gives up after TIMEOUT_MS: a hung service must
 * show as down, not as "up" forever.
 * @param {string} path
 * @param {'json' | 'text'} [as]
 * @returns {Promise<{ body: any, headers: Headers }>}
 */
async function request(path, as = 'json') {
  /** @type {Record<string, string>} */
  const headers = { accept: as === 'json' ? 'application/json' : 'text/plain' };
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token !== null) headers.authorization = `Bearer ${token}`;
  const res = await fetch(path, { headers, signal: AbortSignal.timeout(TIMEOUT_MS) });
  // A service with an auth file (docs/security.md): ask for a token.
  if (res.status === 401) $('token-form').hidden = false;
  if (!res.ok) {
    let code = `HTTP_${res.status}`;
    let message = res.statusText;
    try {
      const body = await res.json();
      code = body.error?.code ?? code;
      message = body.error?.message ?? message;
    } catch {
      // Not our error body (a proxy in between): the status says enough.
    }
    throw new ApiError(res.status, code, message);
  }
  return { body: as === 'json' ? await res.json() : await res.text(), headers: res.headers };
}

/**
 * @param {string} path
 * @param {'json' | 'text'} [as]
 */
async function api(path, as = 'json') {
  return (await request(path, as)).body;
}

/**
 * The latest request of each panel wins: an answer that arrives after a newer request was made
 * is dropped, so a slow old response never overwrites a new one.
 */
const latest = new Map();
/** @param {string} panel */
function ticket(panel) {
  const t = (latest.get(panel) ?? 0) + 1;
  latest.set(panel, t);
  return () => latest.get(panel) === t;
}

/**
 * A path segment, or an ApiError-like refusal for text no URL can carry as a segment.
 * @param {string} text
 */
function seg(text) {
  const s = pathSegment(text);
  if (!s.ok) throw new ApiError(0, 'INVALID_ARGUMENT', s.error);
  return s.segment;
}

/** @param {unknown} err */
function errorText(err) {
  if (err instanceof ApiError) return `${err.code}: ${err.message}`;
  if (err instanceof DOMException && err.name === 'TimeoutError') return `no answer within ${TIMEOUT_MS / 1000} s`;
  return `request failed: ${err instanceof Error ? err.message : String(err)}`;
}

/** @param {HTMLElement} target @param {unknown} err */
function showError(target, err) {
  target.replaceChildren(el('p', { class: 'error', 'data-code': err instanceof ApiError ? err.code : 'NETWORK' }, errorText(err)));
}

// --- overview: health, shard map, traffic -------------------------------------------------

let refreshing = false;

async function refresh() {
  // One refresh at a time: against a slow service they would pile up, then land all at once.
  if (refreshing) return;
  refreshing = true;
  const status = $('status');
  try {
    // The heat map is an admin route: without the admin token it says so, the rest still shows.
    const [health, map, metrics, stats, heal] = await Promise.all([
      api('/healthz'), api('/v1/topology'), api('/metrics', 'text').catch(() => undefined), api('/v1/admin/shards/stats').catch((/** @type {unknown} */ err) => ({ failed: err })),
      api('/v1/heal').catch(() => undefined),
    ]);
    status.dataset.state = 'ok';
    status.textContent = 'up';
    $('service').textContent = `${health.backend} backend · shard map version ${health.topologyVersion}`;
    renderTopology(map);
    renderHeal(heal);
    renderHeatmap(stats);
    if (typeof metrics === 'string') renderTraffic(metrics);
    $('error').hidden = true;
  } catch (err) {
    status.dataset.state = 'down';
    status.textContent = 'unreachable';
    const e = $('error');
    e.hidden = false;
    e.textContent = `The service did not answer: ${errorText(err)}`;
  } finally {
    refreshing = false;
  }
}

/**
 * The heal supervisors' view of each pair (docs/failover.md "Automatic failover"); hidden when none runs.
 * @param {{ supervisors: Array<{ id: string, mode: string, acting: boolean, hostname: string, pid: number, suspects: Array<{ host: string, since: number }>, pairs: Array<{ master: string, slave: string, verdict: string, reason?: string, since: number }> }> } | undefined} heal
 */
function renderHeal(heal) {
  const supervisors = heal?.supervisors ?? [];
  $('heal-panel').hidden = supervisors.length === 0;
  if (supervisors.length === 0) return;
  // The acting supervisor's word first: it is the one that would fail a pair over.
  const ordered = [...supervisors].sort((a, b) => Number(b.acting) - Number(a.acting));
  $('heal-summary').textContent = ordered.map((s) => `${s.id} (${s.acting ? 'acting' : s.mode === 'act' ? 'standing by' : 'observing'}, pid ${s.pid} on ${s.hostname})`).join(' · ');
  const now = Date.now();
  const pairs = new Map();
  for (const s of ordered) for (const p of s.pairs) if (!pairs.has(p.master)) pairs.set(p.master, p);
  $('heal').querySelector('tbody')?.replaceChildren(...[...pairs.values()].map((p) => el('tr', { 'data-master': p.master, class: p.verdict === 'healthy' && p.reason === undefined ? '' : 'warn' },
    el('td', {}, p.master),
    el('td', {}, p.slave),
    el('td', {}, p.verdict),
    el('td', { class: 'num' }, `${Math.max(0, Math.round((now - p.since) / 1000))} s`),
    el('td', {}, p.reason ?? ''))));
}

/** @param {{ version: number, ranges: Array<{ range: [number, number], master: string, slave?: string, open?: boolean, frozen?: { id: string, frozenAt: number, holdMs: number } }>, modShards: { count: number, ranges: Array<{ range: [number, number], master: string }> }, moves?: Array<{ id: string, range: [number, number], source: { master: string }, target: { master: string }, phase: string, detail?: Record<string, string | number | boolean> }> }} map */
function renderTopology(map) {
  const s = summarizeMap(map);
  $('topology-summary').textContent = `${s.shards.toLocaleString('en-US')} logical shards on ${s.hosts} hosts, ${s.open.toLocaleString('en-US')} open for new objects (version ${map.version})`;
  // A fragmented map at moon size has tens of thousands of ranges: one row per master instead.
  const rows = map.ranges.length > SUMMARY_AFTER_RANGES
    ? rangesByMaster(map.ranges).map((p) => el('tr', { 'data-master': p.master },
      el('td', { class: 'mono' }, `${p.ranges.toLocaleString('en-US')} ranges in ${p.first}–${p.last}`),
      el('td', { class: 'num' }, p.shards.toLocaleString('en-US')),
      el('td', {}, p.master),
      el('td', {}, p.slave ?? '–'),
      el('td', {}, `${p.open.toLocaleString('en-US')} open`, p.frozenBy.length > 0 ? el('span', { class: 'frozen' }, ` · frozen by ${p.frozenBy.join(', ')}`) : '')))
    : map.ranges.map((r) => el('tr', {},
      el('td', { class: 'mono' }, `${r.range[0]}–${r.range[1]}`),
      el('td', { class: 'num' }, String(r.range[1] - r.range[0] + 1)),
      el('td', {}, r.master),
      el('td', {}, r.slave ?? '–'),
      el('td', {}, r.open === true ? 'open' : 'closed', r.frozen ? el('span', { class: 'frozen' }, ` · frozen by ${r.frozen.id}`) : '')));
  $('topology').querySelector('tbody')?.replaceChildren(...rows);
  // Moves in progress (docs/moves.md): phase and whether services are holding writes right now.
  const moves = map.moves ?? [];
  $('moves-panel').hidden = moves.length === 0;
  const now = Date.now();
  $('moves').querySelector('tbody')?.replaceChildren(...moves.map((m) => {
    const frozen = map.ranges.find((r) => r.frozen?.id === m.id)?.frozen;
    const held = frozen === undefined ? '–' : now < frozen.frozenAt + frozen.holdMs ? `held (budget ${frozen.holdMs} ms)` : 'freeze expired: not held';
    // What the mover last wrote into the record (at most once a second): shards and rows done, rate, ETA, lag, tables in flight.
    const p = moveProgress(m, now);
    return el('tr', { 'data-move': m.id },
      el('td', { class: 'mono' }, m.id),
      el('td', { class: 'mono' }, `${m.range[0]}–${m.range[1]}`),
      el('td', {}, m.source.master),
      el('td', {}, m.target.master),
      el('td', { title: m.detail?.abortReason ?? m.phase }, moveStepLabel(m), m.detail?.abortReason ? el('span', { class: 'abort-reason' }, `: ${String(m.detail.abortReason).slice(0, 300)}`) : ''),
      el('td', { class: 'num' }, p.progress, ...moveTables(m).map((t) => el('div', { class: 'move-table mono' }, t))),
      el('td', { class: 'num' }, p.lag),
      el('td', { class: 'num' }, p.updated),
      el('td', {}, held));
  }));
  const hosts = new Set(map.modShards.ranges.map((r) => r.master));
  $('modshard-summary').textContent = `Lookups: ${map.modShards.count.toLocaleString('en-US')} mod shards on ${hosts.size} host${hosts.size === 1 ? '' : 's'} (shard = md5(key) mod ${map.modShards.count}).`;
}

/** @param {number | null | undefined} n */
function count(n) {
  return n === null || n === undefined ? '–' : n.toLocaleString('en-US');
}

/**
 * The heat map (docs/dashboard.md): one cell per shard, grouped by master host and by range,
 * coloured by calls per second (or calls since start until the service has a rate); each cell
 * shows its shard, its calls and its objects, its title the reads, writes and rate.
 * @param {any} stats GET /v1/admin/shards/stats, or { failed } when that call failed
 */
/** More master hosts than this and the heat map shows one square per host, to zoom into (#30). */
const HEAT_HOSTS_IN_FULL = 64;

function renderHeatmap(stats) {
  const box = $('heatmap');
  if (stats.failed !== undefined) {
    const err = stats.failed;
    const admin = err instanceof ApiError && (err.status === 401 || err.status === 403);
    $('heatmap-summary').textContent = admin ? 'The shard heat map is an admin route: it needs the admin token (or a loopback service without one).' : `No shard numbers: ${errorText(err)}`;
    box.replaceChildren();
    $('heatmap-legend').hidden = true;
    $('hottest').hidden = true;
    return;
  }
  const groups = heatGroups(stats);
  const shards = stats.ranges.reduce((/** @type {number} */ n, /** @type {{ reads: number[] }} */ r) => n + r.reads.length, 0);
  // Large maps get bare squares (the numbers are in each title and in the busiest-shards table).
  const compact = shards > 256;
  const objectsAge = stats.objectsAt === null ? 'not counted yet' : `counted ${Math.max(0, Math.round((stats.now - stats.objectsAt) / 1000))} s ago`;
  $('heatmap-summary').textContent = `${count(stats.totals.reads + stats.totals.writes)} requests (${count(stats.totals.reads)} reads, ${count(stats.totals.writes)} writes) since ${new Date(stats.since).toISOString().slice(0, 19).replace('T', ' ')} UTC; ${count(stats.totals.objects)} objects (${objectsAge}). Colour: ${groups.byRate ? `requests/s over the last ${Math.round(stats.rateSeconds)} s` : `requests since start${stats.rateSeconds === null ? '' : ` (none in the last ${Math.round(stats.rateSeconds)} s)`}`}.`;
  $('heatmap-legend').hidden = false;
  $('heatmap-scale').textContent = groups.byRate ? formatRate(groups.max) : `${count(groups.max)} requests`;
  /** @param {any} h one host of heatGroups */
  const hostBlock = (h) => el('div', { class: 'heat-host', 'data-host': h.host },
    el('h3', {}, h.host, el('span', { class: 'muted small' }, ` · ${count(h.calls)} requests${h.rate !== undefined ? ` · ${formatRate(h.rate)}` : ''} · ${count(h.objects)} objects`)),
    ...h.ranges.map((r) => el('div', { class: 'heat-range', 'data-range': `${r.range[0]}-${r.range[1]}` },
      el('div', { class: 'heat-range-label' },
        el('span', { class: 'mono' }, `${r.range[0]}–${r.range[1]}`),
        ` ${count(r.calls)} req${r.rate !== undefined ? ` · ${formatRate(r.rate)}` : ''} · ${count(r.objects)} obj`,
        r.frozenBy !== undefined ? el('span', { class: 'frozen' }, ` · frozen by ${r.frozenBy}`) : ''),
      el('div', { class: `heat-cells${compact ? ' compact' : ''}` }, ...r.cells.map((c) => {
        const calls = c.reads + c.writes;
        const level = heatLevel(groups.byRate ? c.rate ?? 0 : calls, groups.max);
        const title = `shard ${c.shard} on ${h.host}: ${count(c.reads)} reads, ${count(c.writes)} writes${c.rate !== undefined ? `, ${formatRate(c.rate)}` : ''}, ${count(c.objects)} objects`;
        const cell = el('div', {
          class: `heat-cell heat-${level}`, title, 'data-shard': String(c.shard), 'data-reads': String(c.reads), 'data-writes': String(c.writes), 'data-objects': c.objects === null ? '' : String(c.objects),
        });
        if (!compact) cell.append(el('span', { class: 'heat-shard' }, String(c.shard)), el('span', { class: 'heat-calls' }, `${count(calls)} req`), el('span', { class: 'heat-objects' }, `${count(c.objects)} obj`));
        return cell;
      })))));
  if (groups.hosts.length <= HEAT_HOSTS_IN_FULL) box.replaceChildren(...groups.hosts.map(hostBlock));
  else {
    // Moon size (#30): one square per master host, coloured by its total; a click zooms into that
    // host's ranges and shards (65,536 shard squares at once would take the page seconds to lay out).
    const hostMax = Math.max(0, ...groups.hosts.map((h) => (groups.byRate ? h.rate ?? 0 : h.calls)));
    const detail = el('div', { id: 'heatmap-detail' });
    const squares = groups.hosts.map((h) => {
      const sq = el('button', {
        type: 'button', class: `heat-cell heat-${heatLevel(groups.byRate ? h.rate ?? 0 : h.calls, hostMax)}`, 'data-host': h.host,
        title: `${h.host}: ${h.ranges.length} ranges, ${count(h.ranges.reduce((/** @type {number} */ n, /** @type {any} */ r) => n + r.cells.length, 0))} shards, ${count(h.calls)} requests${h.rate !== undefined ? `, ${formatRate(h.rate)}` : ''}, ${count(h.objects)} objects`,
      });
      sq.addEventListener('click', () => detail.replaceChildren(hostBlock(h)));
      return sq;
    });
    box.replaceChildren(
      el('p', { id: 'heatmap-zoom', class: 'small muted' }, `${count(groups.hosts.length)} master hosts, ${count(shards)} shards: one square per host, coloured by its requests; click one for its ranges and shards.`),
      el('div', { class: 'heat-cells compact heat-hosts' }, ...squares),
      detail);
  }
  const hot = hottestShards(groups, 10);
  $('hottest').hidden = hot.length === 0;
  $('hottest').querySelector('tbody')?.replaceChildren(...hot.map((c) => el('tr', { 'data-shard': String(c.shard) },
    el('td', { class: 'mono' }, String(c.shard)),
    el('td', {}, c.host),
    el('td', { class: 'num' }, count(c.reads)),
    el('td', { class: 'num' }, count(c.writes)),
    el('td', { class: 'num' }, formatRate(c.rate)),
    el('td', { class: 'num' }, count(c.objects)))));
}

/** @param {string} text */
function renderTraffic(text) {
  const samples = parsePrometheus(text);
  const now = performance.now();
  const { routes, totals } = routeTraffic(samples, previousTotals, (now - previousAt) / 1000);
  previousTotals = totals;
  previousAt = now;
  const rows = routes.map((r) => el('tr', {},
    el('td', { class: 'mono' }, `${r.method} ${r.route}`),
    el('td', { class: 'num' }, r.total.toLocaleString('en-US')),
    el('td', { class: 'num' }, formatRate(r.rate)),
    el('td', { class: 'num' }, String(r.clientErrors)),
    el('td', { class: 'num' }, String(r.serverErrors)),
    el('td', { class: 'num' }, formatDuration(r.p50)),
    el('td', { class: 'num' }, formatDuration(r.p99))));
  $('traffic').querySelector('tbody')?.replaceChildren(...rows);
  const parts = [`shard errors: ${counterValue(samples, 'shardkit_shard_errors_total') ?? 0}`];
  const hits = counterValue(samples, 'shardkit_cache_hits_total');
  const misses = counterValue(samples, 'shardkit_cache_misses_total');
  if (hits !== undefined && misses !== undefined) {
    parts.push(`cache: ${hits} hits, ${misses} misses${hits + misses > 0 ? ` (${Math.round((100 * hits) / (hits + misses))}% hit rate)` : ''}`);
  } else {
    parts.push('no object cache configured');
  }
  $('counters').textContent = parts.join(' · ');
}

// --- explore: objects, mappings, lookups ----------------------------------------------------

/** @param {Array<[string, string | Node]>} pairs */
function fields(pairs) {
  return el('dl', { class: 'fields' }, ...pairs.flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, v)]));
}

/** @param {string} text */
async function showObject(text) {
  const out = $('object-result');
  /** @type {HTMLInputElement} */ ($('object-id')).value = text;
  const decoded = decodePinterestId(text);
  if (!decoded.ok) {
    out.replaceChildren(el('p', { class: 'error', 'data-code': 'INVALID_ID' }, `Not an object ID: ${decoded.error}.`));
    return;
  }
  const typeName = schema?.types.find((t) => t.id === decoded.typeId)?.name;
  const idFields = fields([
    ['shard', String(decoded.shard)],
    ['type', typeName === undefined ? `${decoded.typeId} (not in this schema)` : `${typeName} (${decoded.typeId})`],
    ['local id', decoded.localId],
  ]);
  out.replaceChildren(idFields, el('p', { class: 'muted' }, 'loading…'));
  const current = ticket('object');
  try {
    const { body, headers } = await request(`/v1/objects/${decoded.id}`);
    if (!current()) return;
    const from = (schema?.mappings ?? []).filter((m) => m.from === body.type);
    out.replaceChildren(
      fields([
        ['id', body.id],
        ['type', body.type],
        ['shard', String(body.shard)],
        ['local id', decoded.localId],
        ['created', body.createdAt],
        ['ETag', headers.get('etag') ?? '–'],
      ]),
      el('pre', { id: 'object-json' }, JSON.stringify(body.data, null, 2)),
      ...(from.length > 0 ? [el('p', {}, 'Lists from this object: ', ...from.flatMap((m, i) => [i > 0 ? ' · ' : '', hashLink({ mapping: m.name, from: body.id }, m.name)]))] : []),
    );
  } catch (err) {
    if (!current()) return;
    out.replaceChildren(idFields);
    out.append(el('p', { class: 'error', 'data-code': err instanceof ApiError ? err.code : 'NETWORK' }, errorText(err)));
  }
}

/**
 * One page of a mapping, with a preview of each object (one multi-get for the page: the join).
 * The cursor of a later page is in the hash too, so reload and back keep the page.
 * @param {string} name @param {string} from @param {'asc' | 'desc'} order @param {string | undefined} cursor
 */
async function showMapping(name, from, order, cursor) {
  const out = $('mapping-result');
  /** @type {HTMLSelectElement} */ ($('mapping-name')).value = name;
  /** @type {HTMLInputElement} */ ($('mapping-from')).value = from;
  /** @type {HTMLSelectElement} */ ($('mapping-order')).value = order;
  out.replaceChildren(el('p', { class: 'muted' }, 'loading…'));
  const current = ticket('mapping');
  try {
    const base = `/v1/mappings/${seg(name)}/${seg(from.trim())}`;
    const [page, count] = await Promise.all([
      api(`${base}?limit=${PAGE}&order=${order}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`),
      api(`${base}/count`),
    ]);
    /** @type {Map<string, { data: unknown }>} */
    const objects = new Map();
    if (page.items.length > 0) {
      const many = await api(`/v1/objects?ids=${page.items.map((/** @type {{ id: string }} */ i) => i.id).join(',')}`);
      for (const o of many.objects) objects.set(o.id, o);
    }
    if (!current()) return;
    const rows = page.items.map((/** @type {{ id: string, sequence: number }} */ item) => {
      const o = objects.get(item.id);
      const preview = o === undefined ? '(deleted)' : JSON.stringify(o.data);
      return el('tr', {},
        el('td', {}, hashLink({ object: item.id }, item.id)),
        el('td', { class: 'mono' }, describeSequence(item.sequence)),
        el('td', { class: 'mono' }, preview.length > 80 ? `${preview.slice(0, 79)}…` : preview));
    });
    const table = el('table', { id: 'mapping-items' }, el('thead', {}, el('tr', {}, el('th', {}, 'to'), el('th', {}, 'sequence'), el('th', {}, 'object'))), el('tbody', {}, ...rows));
    const summary = el('p', { class: 'muted' }, `${count.count.toLocaleString('en-US')} in ${name} of ${from.trim()}; ${page.items.length} on this page.`);
    out.replaceChildren(summary, table);
    if (cursor !== undefined) out.append(hashLink({ mapping: name, from: from.trim(), order }, 'First page'), ' ');
    if (page.next !== null) {
      const more = el('button', { type: 'button', class: 'secondary', id: 'mapping-next' }, 'Next page');
      more.addEventListener('click', () => navigate({ mapping: name, from: from.trim(), order, cursor: page.next }));
      out.append(more);
    }
  } catch (err) {
    if (current()) showError(out, err);
  }
}

/** @param {string} keyspace @param {string} key */
async function showLookup(keyspace, key) {
  const out = $('lookup-result');
  /** @type {HTMLSelectElement} */ ($('lookup-keyspace')).value = keyspace;
  /** @type {HTMLInputElement} */ ($('lookup-key')).value = key;
  out.replaceChildren(el('p', { class: 'muted' }, 'loading…'));
  const current = ticket('lookup');
  try {
    // The query form carries every key, "." and ".." included (a path cannot).
    const found = await api(`/v1/lookups/${seg(keyspace)}?key=${encodeURIComponent(key)}`);
    if (current()) out.replaceChildren(fields([['key', found.key], ['id', hashLink({ object: found.id }, found.id)]]));
  } catch (err) {
    if (current()) showError(out, err);
  }
}

/** What the location hash asks for. */
function route() {
  const p = new URLSearchParams(location.hash.slice(1));
  const object = p.get('object');
  const mapping = p.get('mapping');
  const lookup = p.get('lookup');
  if (object !== null) void showObject(object);
  if (mapping !== null) void showMapping(mapping, p.get('from') ?? '', p.get('order') === 'asc' ? 'asc' : 'desc', p.get('cursor') ?? undefined);
  if (lookup !== null) void showLookup(lookup, p.get('key') ?? '');
}

/**
 * Puts the form's request in the hash; when the hash is already that (the same request again),
 * runs it directly, as no hashchange will.
 * @param {Record<string, string>} params
 */
function navigate(params) {
  const hash = `#${new URLSearchParams(params)}`;
  if (location.hash === hash) route();
  else location.hash = hash;
}

/** @param {HTMLSelectElement} select @param {string[]} names */
function fillSelect(select, names) {
  select.replaceChildren(...names.map((n) => el('option', { value: n }, n)));
}

/** Reads the schema into the explorer's menus (again after a token is given). */
async function loadSchema() {
  try {
    schema = await api('/v1/schema');
    fillSelect(/** @type {HTMLSelectElement} */ ($('mapping-name')), schema?.mappings.map((m) => m.name) ?? []);
    fillSelect(/** @type {HTMLSelectElement} */ ($('lookup-keyspace')), schema?.keyspaces.map((k) => k.name) ?? []);
  } catch (err) {
    const e = $('error');
    e.hidden = false;
    e.textContent = `Could not read the schema: ${errorText(err)}`;
  }
}

async function start() {
  await loadSchema();
  $('token-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const input = /** @type {HTMLInputElement} */ ($('token'));
    const token = input.value.trim();
    input.value = '';
    if (token === '') sessionStorage.removeItem(TOKEN_KEY);
    else sessionStorage.setItem(TOKEN_KEY, token);
    $('token-form').hidden = true;
    void loadSchema().then(() => refresh()).then(route);
  });
  $('object-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    navigate({ object: /** @type {HTMLInputElement} */ ($('object-id')).value.trim() });
  });
  $('mapping-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    navigate({
      mapping: /** @type {HTMLSelectElement} */ ($('mapping-name')).value,
      from: /** @type {HTMLInputElement} */ ($('mapping-from')).value.trim(),
      order: /** @type {HTMLSelectElement} */ ($('mapping-order')).value,
    });
  });
  $('lookup-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    navigate({ lookup: /** @type {HTMLSelectElement} */ ($('lookup-keyspace')).value, key: /** @type {HTMLInputElement} */ ($('lookup-key')).value });
  });
  window.addEventListener('hashchange', route);
  route();
  await refresh();
  setInterval(() => void refresh(), REFRESH_MS);
}

void start();
