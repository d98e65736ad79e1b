import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/**
 * The import graph of a source tree, read as text (nothing runs): every static `import`,
 * `export ... from` and `import('literal')`, type-only ones included (a type import couples the
 * layers as much as a value import does). Specifiers that are not relative (packages, node:)
 * are left out; `.js` in a specifier names the `.ts` file beside it.
 */
export interface ImportGraph {
  /** Files relative to the root, with forward slashes: `storage/mysql/index.ts`. */
  files: string[];
  /** file -> the files it imports (relative to the root). */
  edges: Map<string, string[]>;
}

export function readImportGraph(root: string): ImportGraph {
  const files: string[] = [];
  (function walk(dir: string) {
    for (const name of readdirSync(dir).sort()) {
      const p = join(dir, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) files.push(relative(root, p).split('\\').join('/'));
    }
  })(root);
  const known = new Set(files);
  const edges = new Map<string, string[]>();
  for (const file of files) {
    const targets: string[] = [];
    for (const spec of specifiers(readFileSync(join(root, file), 'utf8'))) {
      if (!spec.startsWith('.')) continue;
      if (spec.includes('${')) {
        // A template import(`../storage/${kind}/index.js`): every file its pattern can name.
        for (const hit of templateTargets(root, file, spec, files)) if (!targets.includes(hit)) targets.push(hit);
        continue;
      }
      const abs = resolve(root, dirname(file), spec);
      const rel = relative(root, abs).split('\\').join('/');
      const candidates = [rel.replace(/\.js$/, '.ts'), `${rel}.ts`, `${rel}/index.ts`];
      const hit = candidates.find((c) => known.has(c));
      if (hit !== undefined && !targets.includes(hit)) targets.push(hit);
    }
    edges.set(file, targets);
  }
  return { files, edges };
}

// import x from '…', import type { a, b } from '…', export * as n from '…', import '…', import('…'):
// the clause before `from` is matched exactly, so prose in comments does not count.
const STATIC = /^[ \t]*(?:import|export)(?:[ \t]+type)?[ \t]*(?:\{[^}]*\}|\*(?:\s+as\s+\w+)?|\w+(?:\s*,\s*(?:\{[^}]*\}|\*\s+as\s+\w+))?)\s*from\s*['"]([^'"]+)['"]/gm;
const BARE = /^[ \t]*import\s*['"]([^'"]+)['"]/gm;
const DYNAMIC = /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g;
const TEMPLATE = /\bimport\(\s*`([^`]+)`\s*\)/g;

/** The module specifiers a file's text names (TypeScript 7 has no JavaScript API to ask). */
export function specifiers(text: string): string[] {
  const out: string[] = [];
  for (const re of [STATIC, BARE, DYNAMIC, TEMPLATE]) for (const m of text.matchAll(re)) out.push(m[1]!);
  return out;
}

/** The files a template specifier can name: each `${…}` matches one path segment or part of one. */
export function templateTargets(root: string, file: string, spec: string, files: readonly string[]): string[] {
  const marker = '\u0000';
  const literal = spec.replace(/\$\{[^}]*\}/g, marker);
  const rel = relative(root, resolve(root, dirname(file), literal)).split('\\').join('/');
  const escape = (x: string): string => x.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const pattern = rel.replace(/\.js$/, '.ts').split(marker).map(escape).join('[^/]+');
  const re = new RegExp(`^${pattern}(?:\\.ts|/index\\.ts)?$`);
  return files.filter((f) => re.test(f));
}

/** The module a file belongs to: its first folder under src, or the file itself at the root (`errors`, `index`). */
export function moduleOf(file: string): string {
  const slash = file.indexOf('/');
  return slash < 0 ? file.replace(/\.ts$/, '') : file.slice(0, slash);
}

/** Import circles: each strongly connected set of two or more files (or a file importing itself), sorted. */
export function importCycles(graph: ImportGraph): string[][] {
  // Tarjan's algorithm, iterative enough for a source tree (recursion depth = longest chain).
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string): void => {
    idx.set(v, index);
    low.set(v, index);
    index++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.edges.get(v) ?? []) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, idx.get(w)!));
      }
    }
    if (low.get(v) === idx.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1 || (graph.edges.get(v) ?? []).includes(v)) out.push(scc.sort());
    }
  };
  for (const f of graph.files) if (!idx.has(f)) visit(f);
  return out.sort((a, b) => a[0]!.localeCompare(b[0]!));
}
