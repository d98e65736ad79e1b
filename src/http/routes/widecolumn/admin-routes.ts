// The wide-column admin routes: what `shardkit wc --url` calls (compact, backup, export).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { WideColumnEngine } from '../../../widecolumn/engine.js';
import { backupToExportDir, exportToExportDir, resolveExportName } from '../../../widecolumn/export-dir.js';
import { backupBody, errors, exportBody } from './schemas.js';

/** Checks `name` before the schema does, so a path gets our message rather than Ajv's pattern text. */
function exportNameCheck(exportDir: string, what: string): (request: FastifyRequest) => Promise<void> {
  return async (request) => {
    // Before the schema, so a bad name gets this message rather than the pattern; a name of
    // another JSON type is left to the (non-coercing) body validator.
    const name = (request.body as { name?: unknown } | undefined)?.name;
    if (typeof name === 'string') resolveExportName(exportDir, name, what);
  };
}

/** Registers the admin routes; backups and exports are written only inside `exportDir`. */
export async function registerAdminRoutes(app: FastifyInstance, store: WideColumnEngine, exportDir: string): Promise<void> {
    // Admin: what `shardkit wc --url` calls. A client names an entry of the export directory and
    // never gives a path: whoever can reach the service must not pick where it writes.
    app.post('/v1/admin/widecolumn/compact', {
      schema: {
        tags: ['widecolumn-admin'],
        summary: 'Run the compaction job now (expired cells and versions beyond maxVersions leave the disk)',
        description: 'Takes no options: the body is empty or `{}` (with Content-Type: application/json); any field is 400.',
        body: { type: 'object', properties: {}, additionalProperties: false },
        response: { 200: { type: 'object', additionalProperties: { type: 'integer' } }, ...errors },
      },
      // An empty body is none (app.ts); a field is refused rather than silently ignored (#34 finding 6).
      config: { optionalBody: true },
      preValidation: async (request) => {
        if (request.body === undefined) request.body = {};
      },
    }, async () => ({ ...(await store.compact()) }));

    app.post<{ Body: { name: string } }>('/v1/admin/widecolumn/backup', {
      preValidation: exportNameCheck(exportDir, 'backup name'),
      schema: {
        tags: ['widecolumn-admin'],
        summary: 'Write a consistent backup from a RocksDB snapshot into a new directory <name> of the service\'s export directory',
        description: 'name: a plain name, not a path (an existing entry of that name is refused with ALREADY_EXISTS). The export directory is config widecolumn.exportDir, by default <data>/widecolumn-exports. The answer\'s dir is the backup\'s path on the service machine.',
        body: backupBody,
        response: {
          200: { type: 'object', properties: { name: { type: 'string' }, dir: { type: 'string' }, records: { type: 'integer' }, bytes: { type: 'integer' }, files: { type: 'integer' }, snapshotAt: { type: 'integer' } }, required: ['name', 'dir', 'records', 'bytes', 'files'] },
          ...errors,
        },
      },
    }, async (request) => backupToExportDir(store, exportDir, request.body.name));

    app.post<{ Body: { dataset: string; name: string; overwrite?: boolean } }>('/v1/admin/widecolumn/export', {
      preValidation: exportNameCheck(exportDir, 'export name'),
      schema: {
        tags: ['widecolumn-admin'],
        summary: 'Export the live cells of a dataset as Parquet (row_key, column, timestamp, value) to the file <name> of the service\'s export directory',
        description: 'name: a plain name, not a path; an existing file is replaced only with overwrite: true. The answer\'s file is its path on the service machine.',
        body: exportBody,
        response: {
          200: { type: 'object', properties: { dataset: { type: 'string' }, name: { type: 'string' }, file: { type: 'string' }, rows: { type: 'integer' }, cells: { type: 'integer' }, durationMs: { type: 'integer' } }, required: ['dataset', 'name', 'file', 'rows', 'cells'] },
          ...errors,
        },
      },
    }, async (request) => exportToExportDir(store, exportDir, request.body.dataset, request.body.name, { overwrite: request.body.overwrite === true }));
}
