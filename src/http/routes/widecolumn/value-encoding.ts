// Value encoding of the wide-column routes: request items to the library's PutItem, rows to JSON.
import { isUtf8 } from 'node:buffer';
import { ShardKitError } from '../../../errors.js';
import type { PutItem, RowResult } from '../../../widecolumn/types.js';

export interface JsonItem {
  column: string;
  value: string;
  timestamp?: number;
  encoding?: 'utf8' | 'base64';
}

export type Encoding = 'utf8' | 'base64';

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

export function decodeItem(item: JsonItem): PutItem {
  let value: string | Buffer = item.value;
  if (item.encoding === 'base64') {
    if (!BASE64.test(item.value)) throw new ShardKitError('INVALID_ARGUMENT', `value of column ${JSON.stringify(item.column.slice(0, 80))} is not valid base64`);
    value = Buffer.from(item.value, 'base64');
  }
  return item.timestamp === undefined ? { column: item.column, value } : { column: item.column, value, timestamp: item.timestamp };
}

/**
 * Values go out as UTF-8 text, or base64 (flagged per cell) when asked or not valid UTF-8.
 * Columns stay an array in the store's order (issue 15, defect 4: as object keys, integer-like
 * names were moved first by every JSON serializer, against the documented order and the marker).
 */
export function rowToJson(r: RowResult, encoding: Encoding): { row: string; columns: Array<{ column: string; cells: unknown[] }>; marker: string | null } {
  const columns = r.columns.map((c) => ({
    column: c.column,
    cells: c.cells.map((cell) =>
      encoding === 'utf8' && isUtf8(cell.value)
        ? { timestamp: cell.timestamp, value: cell.value.toString('utf8') }
        : { timestamp: cell.timestamp, value: cell.value.toString('base64'), encoding: 'base64' },
    ),
  }));
  return { row: r.row, columns, marker: r.marker };
}
