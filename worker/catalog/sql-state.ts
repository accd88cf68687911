/**
 * A catalog instance's `state` rows (name -> text): settings, cursors and markers that are one
 * value each. A leaf: every sql-*.ts file may read them without importing another's rows.
 */

/** A state row's value (null: absent). */
export function readState(sql: SqlStorage, name: string): string | null {
  return sql.exec<{ value: string }>('SELECT value FROM state WHERE name = ?', name).toArray()[0]?.value ?? null;
}

/** Several state rows' values in one query (absent rows: not in the map). */
export function readStates(sql: SqlStorage, names: readonly string[]): Map<string, string> {
  const rows = sql.exec<{ name: string; value: string }>(`SELECT name, value FROM state WHERE name IN (${names.map(() => '?').join(', ')})`, ...names);
  return new Map(rows.toArray().map((r) => [r.name, r.value]));
}

/** Sets a state row (null removes it). */
export function writeState(sql: SqlStorage, name: string, value: string | null): void {
  if (value === null) sql.exec('DELETE FROM state WHERE name = ?', name);
  else sql.exec('INSERT OR REPLACE INTO state (name, value) VALUES (?, ?)', name, value);
}
