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
    return this.toArray()
      .map((r) => cols.map((c) => (r as Row)[c]!))
      [Symbol.iterator]();
  }
  [Symbol.iterator](): Iterator<T> {
    return this;
  }
}

/**
 * Schema scripts run on an empty database, by the chain of scripts that led there: the database
 * each chain leaves. Creating the catalog's schema statement by statement takes sql.js ~20 ms,
 * and the Node suite creates thousands of instances; opening a copy of the result takes 0.3 ms.
 * Only a chain begun on an empty database, with nothing else run in between, is reused, so the
 * instance is byte for byte what running the scripts would have made.
 */
const schemaResults = new Map<string, Uint8Array>();

export class SqliteStorage {
  private depth = 0;
  alarm: number | null = null;
  /**
   * Prepared statements by query text: sql.js compiles each statement again on every prepare, and
   * the catalog runs the same few hundred queries thousands of times in a test (SQLite recompiles a
   * cached statement itself when the schema changes). Freed whenever sql.js frees them (export).
   */
  private statements = new Map<string, ReturnType<Database['prepare']>>();
  /** Databases this storage replaced: with SQLite's total_changes, a count that only grows. */
  private generation = 0;
  /** The chain of schema scripts this database is the result of, while that is all it is (null after anything else). */
  private schemaChain: string | null;

  constructor(private db: Database = new SQL.Database()) {
    this.schemaChain = db.exec('SELECT 1 FROM sqlite_master LIMIT 1').length ? null : '';
  }

  /**
   * Every row written so far (SQLite's total_changes, never less than before): the mutation
   * suites take an unchanged count as an unchanged database instead of reading it all again.
   */
  writes(): string {
    return `${this.generation}.${this.db.exec('SELECT total_changes()')[0]!.values[0]![0]}`;
  }

  /** A copy of the whole database, as SQLite's own file format (fixtures, snapshots). */
  export(): Uint8Array {
    this.statements.clear(); // sql.js frees every prepared statement when it exports
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
    const schemaScript = this.schemaChain !== null && this.depth === 0 && !bindings.length && /^\s*CREATE\s/i.test(query);
    if (schemaScript) {
      const chain = `${this.schemaChain}\u0000${query}`;
      const result = schemaResults.get(chain);
      if (result) {
        this.replaceDatabase(new SQL.Database(result));
        this.schemaChain = chain;
        return new Cursor<T>([], [], 0, 0);
      }
      const cursor = this.run<T>(query, bindings);
      schemaResults.set(chain, this.export());
      this.schemaChain = chain;
      return cursor;
    }
    if (this.schemaChain !== null && !/^\s*SELECT\s/i.test(query)) this.schemaChain = null;
    return this.run<T>(query, bindings);
  }

  private replaceDatabase(db: Database): void {
    for (const stmt of this.statements.values()) stmt.free();
    this.statements.clear();
    this.generation++;
    this.db.close();
    this.db = db;
  }

  private run<T>(query: string, bindings: unknown[]): Cursor<T> {
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
      let stmt = this.statements.get(query);
      if (!stmt) this.statements.set(query, (stmt = this.db.prepare(query)));
      try {
        stmt.bind(bindings.map((b) => (b === undefined ? null : (b as SqlValue))));
        run(stmt);
      } finally {
        stmt.reset();
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
    this.replaceDatabase(new SQL.Database());
    this.schemaChain = '';
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
