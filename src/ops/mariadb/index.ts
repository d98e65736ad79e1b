// What the CLI's MyRocks dev extension uses of the MariaDB server helpers.
export { ROCKSDB_SETTINGS } from './mariadb-instance.js';
