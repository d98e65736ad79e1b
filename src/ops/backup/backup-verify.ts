import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BackupEngine } from './backup-engine.js';
import { readManifest, type BackupManifest, type TableSummary } from './backup-manifest.js';
import type { BackupTarget } from './backup-target.js';

export interface VerifyReport {
  id: string;
  units: number;
  tables: number;
  rows: number;
  /** `unit: table: what differs`; empty when the drill restored exactly what the manifest says. */
  differing: string[];
}

/** The tables whose rows or checksum differ between what the manifest says and what a restore holds. */
export function compareSummaries(unit: string, want: Record<string, TableSummary>, have: Record<string, TableSummary>): string[] {
  const out: string[] = [];
  for (const name of new Set([...Object.keys(want), ...Object.keys(have)])) {
    const w = want[name];
    const h = have[name];
    if (!w) out.push(`${unit}: ${name}: not in the manifest`);
    else if (!h) out.push(`${unit}: ${name}: missing from the restore`);
    else if (w.rows !== h.rows || w.checksum !== h.checksum) out.push(`${unit}: ${name}: ${h.rows} rows, checksum ${h.checksum}; the manifest says ${w.rows} rows, ${w.checksum}`);
  }
  return out.sort();
}

/**
 * `shardkit backup verify`: a restore drill. Each unit is restored into a throwaway local server
 * (or file) and its row counts and checksums are compared with the manifest's.
 */
export async function verifyBackup(engine: BackupEngine, target: BackupTarget, id?: string): Promise<VerifyReport> {
  const manifest: BackupManifest = await readManifest(target, id);
  const report: VerifyReport = { id: manifest.id, units: manifest.units.length, tables: 0, rows: 0, differing: [] };
  for (const u of manifest.units) {
    const scratch = mkdtempSync(join(tmpdir(), 'shardkit-drill-'));
    try {
      const have = await engine.drillUnit(u, target, manifest.id, scratch);
      report.tables += Object.keys(u.tables).length;
      report.rows += Object.values(u.tables).reduce((n, t) => n + t.rows, 0);
      report.differing.push(...compareSummaries(u.unit, u.tables, have));
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  }
  return report;
}
