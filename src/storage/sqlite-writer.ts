/**
 * The SQLite writer thread (a Worker): runs write-only batches (sqlite-writer-client.ts) on its own
 * connection to the database file, so the per-request rows of the write-behinds (usage records and
 * their rollups, call logs, remembered cache hits) cost the request thread no SQLite time. WAL mode
 * lets the request thread read while this thread writes; the two take turns for the write lock
 * (busy_timeout), as two processes on one file would.
 *
 * Protocol (structured clone; `text` is the JSON of the batch's statements, cheaper to send than objects):
 *   in:  { type: "open", path, busyTimeoutMs } | { type: "batch", id, text: '{"texts": [sql, …], "stmts": [[k, [value, …]], …]}' } | { type: "close" }
 *   out: { type: "done", id } | { type: "failed", id, code?, message } | { type: "closed" }
 * A batch is one transaction (BEGIN IMMEDIATE … COMMIT): every statement or none.
 */
import { Database, type Statement } from "bun:sqlite";

declare const self: Worker;

let db: Database | undefined;
const statements = new Map<string, Statement>();

function statementOf(sql: string): Statement {
  let s = statements.get(sql);
  if (!s) statements.set(sql, (s = db!.query(sql)));
  return s;
}

function runBatch(text: string) {
  const { texts, stmts } = JSON.parse(text) as { texts: string[]; stmts: [number, (string | number | boolean | null)[]][] };
  db!.run("BEGIN IMMEDIATE");
  try {
    for (const [k, values] of stmts) {
      const sql = texts[k]!;
      const stmt = statementOf(sql);
      // values in SQLite's parameter order (write-batch.ts); a count that differs is a recording bug, never bound by guess
      if (stmt.paramsCount !== values.length) throw new Error(`statement has ${stmt.paramsCount} parameters, the batch sent ${values.length}: ${sql.slice(0, 120)}`);
      // an array binds by position (no spread of 1,500 arguments)
      stmt.run(values as unknown as string[]);
    }
    db!.run("COMMIT");
  } catch (e) {
    if (db!.inTransaction) db!.run("ROLLBACK");
    throw e;
  }
}

self.onmessage = (ev: MessageEvent) => {
  const msg = ev.data as { type: string; id?: number; text?: string; path?: string; busyTimeoutMs?: number };
  if (msg.type === "open") {
    db = new Database(msg.path!, { strict: true });
    db.run(`PRAGMA busy_timeout = ${Math.max(0, Math.floor(msg.busyTimeoutMs ?? 5000))}`);
    db.run("PRAGMA synchronous = NORMAL");
    db.run("PRAGMA foreign_keys = ON");
    return;
  }
  if (msg.type === "batch") {
    try {
      runBatch(msg.text!);
      self.postMessage({ type: "done", id: msg.id });
    } catch (e) {
      self.postMessage({ type: "failed", id: msg.id, code: (e as { code?: unknown }).code, message: String((e as Error)?.message ?? e) });
    }
    return;
  }
  if (msg.type === "close") {
    for (const s of statements.values()) s.finalize();
    statements.clear();
    db?.close();
    db = undefined;
    self.postMessage({ type: "closed" });
  }
};
