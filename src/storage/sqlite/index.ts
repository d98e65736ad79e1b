export { SqliteBackend, type SqliteBackendOptions } from './sqlite-backend.js';
export { MAX_LOOKUP_KEY_BYTES, MAX_STORED_ID } from '../backend-args.js';
