import type { ReadHints } from './row-reader.js';
import type { RowContext } from './row-context.js';
import type { Logger } from './types.js';

/** What the scheduler needs from its store. */
export interface FoldHost {
  /** True once the store is closing: no new background fold starts. */
  closing(): boolean;
  /** Counts a background operation in flight (close() waits for it), and its end. */
  enter(): void;
  leave(): void;
  /** Exclusive locks on rows; resolves to their release. */
  lockRows(ids: string[]): Promise<() => void>;
  /** Folds the write logs of rows whose locks are held. */
  foldRows(ctxs: RowContext[]): Promise<unknown>;
  readonly logger: Logger | undefined;
}

/**
 * When a row's write log is folded into its heads in the background (docs/widecolumn.md, "Head
 * records and the write log"): every `foldAfter` puts to the row, and after a read of a deep row
 * that met log records. Also what reads remember between calls (ReadHints): rows found deep, and
 * the columns their first page listed. These memories are approximate and dropped whole when they fill.
 */
export class FoldScheduler {
  /** Puts per row since its log was last folded. */
  private readonly logCounts = new Map<string, number>();
  private readonly folding = new Map<string, Promise<void>>();
  private readonly deepRows = new Set<string>();
  /** Escaped column names of a deep row's first page (rows with at most 64 columns on it). */
  private readonly deepColumns = new Map<string, Buffer[]>();
  readonly hints: ReadHints;

  constructor(private readonly host: FoldHost, readonly foldAfter: number, skipBudget: number) {
    this.hints = {
      skipBudget,
      isDeep: (ctx) => this.deepRows.has(ctx.id),
      markDeep: (ctx) => {
        if (this.deepRows.size >= 100_000) this.deepRows.clear();
        this.deepRows.add(ctx.id);
      },
      columnsOf: (ctx) => this.deepColumns.get(ctx.id),
      rememberColumns: (ctx, names) => {
        if (names.length > 64) {
          this.deepColumns.delete(ctx.id);
          return;
        }
        if (this.deepColumns.size >= 100_000) this.deepColumns.clear();
        this.deepColumns.set(ctx.id, names);
      },
      forgetColumns: (ctx) => {
        this.deepColumns.delete(ctx.id);
      },
      // A deep row read with a log pays a multi-get for the logged cells: fold it for the next read.
      logRecords: (ctx, records) => {
        if (records > 0) this.schedule(ctx);
      },
    };
  }

  /** Counts a put to a row with a write log; the log is folded every `foldAfter` puts. */
  logged(ctx: RowContext): void {
    const n = (this.logCounts.get(ctx.id) ?? 0) + 1;
    if (n >= this.foldAfter) {
      this.schedule(ctx);
      return;
    }
    if (this.logCounts.size >= 100_000) this.logCounts.clear();
    this.logCounts.set(ctx.id, n);
  }

  /**
   * Folds a row's write log into its heads in the background, under the row's exclusive lock.
   * A fold changes no answer, only how much a read has to merge, so a failure is only logged.
   */
  schedule(ctx: RowContext): void {
    this.logCounts.delete(ctx.id);
    if (this.host.closing() || this.folding.has(ctx.id)) return;
    this.host.enter();
    const run = (async () => {
      let release: (() => void) | null = null;
      try {
        release = await this.host.lockRows([ctx.id]);
        await this.host.foldRows([ctx]);
      } catch (err) {
        this.host.logger?.warn({ err, dataset: ctx.ds.name, row: ctx.row }, 'wide-column write-log fold failed');
      } finally {
        release?.();
        this.folding.delete(ctx.id);
        this.host.leave();
      }
    })();
    this.folding.set(ctx.id, run);
  }

  /** Settles when the background folds started so far have finished. */
  async settled(): Promise<void> {
    while (this.folding.size > 0) await Promise.all(this.folding.values());
  }
}
