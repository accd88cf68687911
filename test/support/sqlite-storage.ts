/**
 * Durable Object storage in Node: the `SqlStorage` shape of workerd (exec with bindings, cursors
 * with toArray/one, several statements in one exec, transactionSync with nesting) over sql.js,
 * SQLite compiled to wasm. It lets Node tests run the catalog's one SQL implementation
 * (worker/catalog/durable-object.ts) instead of a double of its rules (docs/ARCHITECTURE.md).
 * Alarms are recorded, never fired: tests that need the repair worklist drive it themselves.
 */
import initSqlJs, { type Database, type SqlValue } from 'sql.js';

const SQL = await initSqlJs();

type Row = Record<string, SqlValue>;

class Cursor<T> implements Iterable<T> {
  private at = 0;
  constructor(
    private readonly rows: T[],
    readonly columnNames: string[],
    readonly rowsRead: number,
    readonly rowsWritten: number,
  ) {}
  toArray(): T[] {
    const rest = this.rows.slice(this.at);
    this.at = this.rows.length;
    return rest;
  }
  one(): T {
    if (this.rows.length !== 1) throw new Error(`Expected exactly one result from SQL query, but got ${this.rows.length}.`);
    return this.rows[0]!;
  }
  next(): IteratorResult<T> {
    return this.at < this.rows.length ? { value: this.rows[this.at++]!, done: false } : { value: undefined, done: true };
  }
  raw(): IterableIterator<SqlValue[]> {
    const cols = this.columnNames;
    return this.toArray().map((r) => cols.map((c) => (r as Row)[c]!))[Symbol.iterator]();
  }
  [Symbol.iterator](): Iterator<T> {
    return this;
  }
}

export class SqliteStorage {
  private depth = 0;
  alarm: number | null = null;

  constructor(private db: Database = new SQL.Database()) {}

  /** A copy of the whole database, as SQLite's own file format (fixtures, snapshots). */
  export(): Uint8Array {
    return this.db.export();
  }

  static open(bytes: Uint8Array): SqliteStorage {
    return new SqliteStorage(new SQL.Database(bytes));
  }

  /** A Durable Object's state over this storage, for constructing the object in process. */
  objectState(): DurableObjectState {
    return { storage: this, blockConcurrencyWhile: <T>(fn: () => Promise<T>) => fn(), waitUntil: () => {} } as unknown as DurableObjectState;
  }

  readonly sql = {
    exec: <T = Row>(query: string, ...bindings: unknown[]): Cursor<T> => this.exec<T>(query, bindings),
    get databaseSize(): number {
      return 0;
    },
  } as unknown as SqlStorage;

  private exec<T>(query: string, bindings: unknown[]): Cursor<T> {
    let rows: Row[] = [];
    let columns: string[] = [];
    let written = 0;
    const run = (stmt: ReturnType<Database['prepare']>) => {
      rows = [];
      columns = stmt.getColumnNames();
      while (stmt.step()) rows.push(stmt.getAsObject());
      written += this.db.getRowsModified();
    };
    if (bindings.length) {
      // One statement with parameters (workerd binds them to the query's statement).
      const stmt = this.db.prepare(query);
      try {
        stmt.bind(bindings.map((b) => (b === undefined ? null : (b as SqlValue))));
        run(stmt);
      } finally {
        stmt.free();
      }
    } else {
      for (const stmt of this.db.iterateStatements(query)) run(stmt); // the iterator frees each
    }
    return new Cursor<T>(rows as T[], columns, rows.length, written);
  }

  transactionSync<T>(fn: () => T): T {
    const name = `sp${this.depth++}`;
    this.db.run(`SAVEPOINT ${name}`);
    try {
      const out = fn();
      this.db.run(`RELEASE ${name}`);
      return out;
    } catch (err) {
      this.db.run(`ROLLBACK TO ${name}`);
      this.db.run(`RELEASE ${name}`);
      throw err;
    } finally {
      this.depth--;
    }
  }

  async deleteAll(): Promise<void> {
    this.db.close();
    this.db = new SQL.Database();
    this.alarm = null;
  }

  async getAlarm(): Promise<number | null> {
    return this.alarm;
  }

  async setAlarm(at: number | Date): Promise<void> {
    this.alarm = typeof at === 'number' ? at : at.getTime();
  }

  async deleteAlarm(): Promise<void> {
    this.alarm = null;
  }
}
