#!/usr/bin/env node
// The package as npm would publish it, through the two checkers TypeScript library users trust:
// publint (package.json fields, exports, files: every message, suggestions included, fails) and
// @arethetypeswrong/cli (types resolve to the right files under node16 ESM and CJS, and bundlers).
// `npm run check:package` (build first); test/packaging/checkers.test.ts runs it.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { publint } from 'publint';
import { formatMessage } from 'publint/utils';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dir = mkdtempSync(join(tmpdir(), 'shardkit-pack-'));
let failed = false;
try {
  const pack = spawnSync('npm', ['pack', '--ignore-scripts', '--silent', '--pack-destination', dir], { cwd: root, encoding: 'utf8' });
  if (pack.status !== 0) throw new Error(`npm pack failed: ${pack.stderr}`);
  const tarball = join(dir, readdirSync(dir).find((f) => f.endsWith('.tgz')));

  const lint = await publint({ pkgDir: root, pack: 'npm', level: 'suggestion', strict: true });
  for (const m of lint.messages) console.log(`publint ${m.type}: ${formatMessage(m, lint.pkg)}`);
  console.log(`publint: ${lint.messages.length} message(s)`);
  if (lint.messages.length > 0) failed = true;

  // node10 (moduleResolution "node") cannot see subpath exports: profile node16. Requiring our
  // ESM from CommonJS is require(esm) (Node >= 20.19; TypeScript >= 5.8 with module node20 or
  // nodenext), which the checker, on TypeScript 5.6, still reports as "dynamic import only".
  const attwBin = join(dirname(createRequire(import.meta.url).resolve('@arethetypeswrong/cli/package.json')), 'dist', 'index.js');
  const attw = spawnSync(process.execPath, [attwBin, tarball, '--profile', 'node16', '--ignore-rules', 'cjs-resolves-to-esm', '--format', 'table-flipped', '--no-color'], { encoding: 'utf8' });
  process.stdout.write(attw.stdout);
  process.stderr.write(attw.stderr);
  console.log(`attw: exit ${attw.status}`);
  if (attw.status !== 0) failed = true;
} finally {
  rmSync(dir, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
