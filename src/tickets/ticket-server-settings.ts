/**
 * The `[mysqld]` settings a ticket server needs (for MariadbInstance's `settings` or a my.cnf):
 * the residue split of the seed, and automatic repair of MyISAM tables after a crash so that a
 * killed server comes back on its own (the repair rebuilds from the data file, which holds the
 * newest ticket, so the counter continues above every ID issued).
 */
export function ticketServerSettings(increment: number, offset: number): Record<string, string | number | boolean> {
  return {
    auto_increment_increment: increment,
    auto_increment_offset: offset,
    myisam_recover_options: 'BACKUP,QUICK',
  };
}
