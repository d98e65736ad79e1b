/**
 * Import cost per package entry (issue 33 "Benchmark"): cold import time of each subpath (median
 * of RUNS fresh processes, the import alone, Node's own start excluded) and the modules it loads,
 * against Kysely + better-sqlite3 (the raw SQLite query-builder stack) in the same run; then the
 * size of a consumer install of shardkit with only SQLite beside one of kysely + better-sqlite3.
 *
 *   npm run bench -- import        (or: node --import tsx bench/import.bench.ts [--no-install])
 *
 * The consumer imports through node_modules/shardkit (a link to this build), as an installed
 * package would. Goal: shardkit/kit <= 1.5x Kysely + better-sqlite3.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const RUNS = 7;
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { exports: Record<string, unknown> };

const entries: Array<{ name: string; imports: string[] }> = [
  ...Object.keys(pkg.exports).filter((k) => k !== './package.json').map((k) => {
    const spec = k === '.' ? 'shardkit' : `shardkit/${k.slice(2)}`;
    return { name: spec, imports: [spec] };
  }),
  { name: 'kysely + better-sqlite3 (raw)', imports: ['kysely', 'better-sqlite3'] },
];

const dir = mkdtempSync(join(tmpdir(), 'shardkit-import-bench-'));
mkdirSync(join(dir, 'node_modules'), { recursive: true });
for (const name of ['shardkit', 'kysely', 'better-sqlite3']) symlinkSync(name === 'shardkit' ? ROOT : join(ROOT, 'node_modules', name), join(dir, 'node_modules', name), 'dir');
writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
// Counts every ES module loaded (a load hook, its own run: hooks slow the import they watch).
writeFileSync(join(dir, 'hooks.mjs'), "import { appendFileSync } from 'node:fs';\nexport async function load(url, context, next) { if (url.startsWith('file:')) appendFileSync(process.env.LOADED, url + '\\n'); return next(url, context); }\n");
writeFileSync(join(dir, 'count.mjs'), "import { register } from 'node:module';\nregister('./hooks.mjs', import.meta.url);\n");

function importScript(imports: string[]): string {
  return `const t = performance.now();\n${imports.map((s) => `await import('${s}');`).join('\n')}\nconst ms = performance.now() - t;\nconst { createRequire } = await import('node:module');\nconsole.log(JSON.stringify({ ms, cjs: Object.keys(createRequire(import.meta.url).cache).length }));\n`;
}

function runOnce(imports: string[], count: boolean): { ms: number; cjs: number; esm: number } {
  const file = join(dir, 'probe.mjs');
  writeFileSync(file, importScript(imports));
  const loaded = join(dir, 'loaded.txt');
  rmSync(loaded, { force: true });
  const args = count ? ['--import', './count.mjs', 'probe.mjs'] : ['probe.mjs'];
  const res = spawnSync(process.execPath, args, { cwd: dir, encoding: 'utf8', env: { ...process.env, LOADED: loaded } });
  if (res.status !== 0) throw new Error(`${imports.join(', ')}: ${res.stderr}`);
  const out = JSON.parse(res.stdout) as { ms: number; cjs: number };
  let esm = 0;
  try {
    esm = readFileSync(loaded, 'utf8').split('\n').filter((l) => l.length > 0 && !l.endsWith('/probe.mjs')).length;
  } catch { /* counting run only */ }
  return { ...out, esm };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const rows: Array<{ name: string; median: number; runs: number[]; modules: number }> = [];
// Alternate the entries within each round so a burst of load on the shared machine hits all.
const times = new Map(entries.map((e) => [e.name, [] as number[]]));
for (let r = 0; r < RUNS; r++) for (const e of entries) times.get(e.name)!.push(runOnce(e.imports, false).ms);
for (const e of entries) {
  const counted = runOnce(e.imports, true);
  rows.push({ name: e.name, median: median(times.get(e.name)!), runs: times.get(e.name)!, modules: counted.esm + counted.cjs });
}
const raw = rows.find((r) => r.name.endsWith('(raw)'))!;
console.log(`cold import, median of ${RUNS} fresh processes (Node ${process.version}, ${new Date().toISOString().slice(0, 10)})`);
console.log('entry'.padEnd(34) + 'median ms'.padStart(10) + 'vs raw'.padStart(8) + 'modules'.padStart(9) + '   runs (ms)');
for (const r of rows) {
  console.log(r.name.padEnd(34) + r.median.toFixed(1).padStart(10) + `${(r.median / raw.median).toFixed(2)}x`.padStart(8) + String(r.modules).padStart(9) + '   ' + r.runs.map((x) => x.toFixed(0)).join(' '));
}
const kit = rows.find((r) => r.name === 'shardkit/kit')!;
console.log(`shardkit/kit: ${(kit.median / raw.median).toFixed(2)}x Kysely + better-sqlite3 (goal <= 1.5x)`);

function duBytes(path: string): number {
  let total = 0;
  for (const name of readdirSync(path)) {
    const p = join(path, name);
    const st = statSync(p, { throwIfNoEntry: false });
    if (st === undefined) continue;
    total += st.isDirectory() ? duBytes(p) : st.size;
  }
  return total;
}

function install(what: string, specs: string[]): { packages: number; mb: number } {
  const at = join(dir, `install-${what}`);
  mkdirSync(at, { recursive: true });
  writeFileSync(join(at, 'package.json'), JSON.stringify({ name: `consumer-${what}`, private: true }));
  // --ignore-scripts on both sides: better-sqlite3's native build is the same for both, and it
  // compiles from source here when its prebuilt binary cannot be downloaded.
  const res = spawnSync('npm', ['install', '--ignore-scripts', '--no-audit', '--no-fund', '--omit=peer', ...specs], { cwd: at, encoding: 'utf8' });
  if (res.status !== 0) throw new Error(`npm install ${specs.join(' ')}: ${res.stderr}`);
  const lock = JSON.parse(readFileSync(join(at, 'package-lock.json'), 'utf8')) as { packages: Record<string, unknown> };
  return { packages: Object.keys(lock.packages).filter((k) => k !== '').length, mb: duBytes(join(at, 'node_modules')) / 1e6 };
}

try {
  if (!process.argv.includes('--no-install')) {
    const packed = spawnSync('npm', ['pack', '--ignore-scripts', '--silent', '--pack-destination', dir], { cwd: ROOT, encoding: 'utf8' });
    if (packed.status !== 0) throw new Error(packed.stderr);
    const tarball = join(dir, readdirSync(dir).find((f) => f.endsWith('.tgz'))!);
    const ours = install('shardkit', [tarball]);
    const theirs = install('kysely', ['kysely', 'better-sqlite3']);
    console.log(`consumer install (SQLite only, optional peers omitted, --ignore-scripts): shardkit ${ours.packages} packages, ${ours.mb.toFixed(1)} MB; kysely + better-sqlite3 ${theirs.packages} packages, ${theirs.mb.toFixed(1)} MB`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
