/**
 * The randomized model test of the wide-column engine interface: seeded random operations
 * against an in-memory oracle (seed printed; rerun one with WC_MODEL_SEED=<seed>).
 */
import type { WideColumnSuiteOptions } from './widecolumn-suite.js';

export function runWideColumnModelTests(_options: WideColumnSuiteOptions): void {
  // Filled in with the model test (issue 15).
}
