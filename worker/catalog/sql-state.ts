/**
 * A catalog instance's `state` rows (name -> text): settings, cursors and markers that are one
 * value each. A leaf: every sql-*.ts file may read them without importing another's rows.
 */

/** A state row's value (null: absent). */
export function readState(sql: SqlStorage, name: string): string | null {
  return sql.exec<{ value: string }>('SELECT value FROM state WHERE name = ?', name).toArray()[0]?.value ?? null;
}

/** Sets a state row (null removes it). */
export function writeState(sql: SqlStorage, name: string, value: string | null): void {
  if (value === null) sql.exec('DELETE FROM state WHERE name = ?', name);
  else sql.exec('INSERT OR REPLACE INTO state (name, value) VALUES (?, ?)', name, value);
}
