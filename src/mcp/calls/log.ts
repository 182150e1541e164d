/**
 * The call log: each tool call's record (mcp_calls) and, for a hit, the hit count and last-hit
 * time of the entry that answered it — written behind the answer (storage/write-behind-async.ts):
 * queued per tenant and written in one transaction within FLUSH_MS, at once when MAX calls are
 * queued, and on close. A hit no longer waits for its two writes (~54 µs of ~100 in svc).
 *
 * Reads stay exact: whatever reads what the log feeds (analytics, tool-cache stats, entries'
 * access counts, metrics, a server's access_count and call errors) flushes the tenant's queue
 * first — the call store factory of services.ts does it for every call-record read, ToolCache for
 * the entry reads of its API.
 *
 * The records of a tenant's batch go in multi-row INSERTs of 1, 2, 4, … CHUNK rows (a few statement
 * texts, each prepared once), not one INSERT per call.
 *
 * A hit counts on the entry it was answered from, named by its vec_key (AUTOINCREMENT: never
 * reused): an entry removed before the flush is not touched (no row comes back), and one replaced
 * under the same cache key does not inherit its predecessor's hits. The call record is written
 * regardless (the call happened); mcp_calls has no foreign keys, so a server or tool deleted
 * meanwhile cannot fail the batch.
 */
import type { AsyncStorage, AsyncTenantDb } from "../../storage/async";
import type { Dialect } from "../../storage/dialect";
import { AsyncWriteBehind } from "../../storage/write-behind-async";
import { ToolCacheStore } from "../toolcache/store";
import { CallStore, type CallRecord } from "./store";

interface LoggedCall {
  call: CallRecord;
  /** vec_key of the cache entry a hit was answered from */
  hitEntry: number | null;
}

/** most rows of one INSERT (12 parameters a row) */
const CHUNK = 64;
const COLUMNS = ["at_ms", "server_id", "tool_id", "tool_name", "agent_id", "cache_status", "tier", "cache_key", "latency_ms", "upstream_ms", "error"] as const;
const inserts = new Map<number, string>();

/** the INSERT of `n` call records, parameters `$<column>_<i>` */
function insertOf(n: number): string {
  let sql = inserts.get(n);
  if (!sql) {
    const rows = Array.from({ length: n }, (_, i) => `($tenant, ${COLUMNS.map((c) => `$${c}_${i}`).join(", ")})`);
    sql = `INSERT INTO mcp_calls (tenant_id, ${COLUMNS.join(", ")}) VALUES ${rows.join(", ")}`;
    inserts.set(n, sql);
  }
  return sql;
}

/** Write call records in multi-row INSERTs, each of a power-of-two count of rows (at most CHUNK). */
export async function insertCalls(db: AsyncTenantDb, calls: CallRecord[]) {
  for (let at = 0; at < calls.length; ) {
    let n = CHUNK;
    while (n > calls.length - at) n >>= 1;
    const params: Record<string, unknown> = {};
    for (let i = 0; i < n; i++) {
      const p = CallStore.params(calls[at + i]!);
      for (const c of COLUMNS) params[`${c}_${i}`] = p[c];
    }
    await db.run(insertOf(n), params as Record<string, string | number | bigint | null>);
    at += n;
  }
}

export class CallLog {
  static FLUSH_MS = 200;
  static MAX = 500;
  private readonly queue: AsyncWriteBehind<LoggedCall>;

  constructor(storage: AsyncStorage, d: Dialect, onError: (e: unknown, lostRows: number) => void) {
    this.queue = new AsyncWriteBehind<LoggedCall>(storage, {
      async write(db, rows) {
        await insertCalls(
          db,
          rows.map((r) => r.call),
        );
        await new ToolCacheStore(db, d).recordHits(rows.flatMap((r) => (r.hitEntry === null ? [] : [{ vecKey: r.hitEntry, atMs: r.call.atMs }])));
      },
      flushMs: CallLog.FLUSH_MS,
      max: CallLog.MAX,
      onError,
    });
  }

  record(tenantId: string, call: CallRecord, hitEntry: number | null) {
    this.queue.push(tenantId, { call, hitEntry });
  }

  /** Write the queued calls of a tenant (or of all) before reading what they feed. */
  flush(tenantId?: string): Promise<void> {
    return this.queue.flush(tenantId);
  }

  /** calls queued and not yet written */
  get pending(): number {
    return this.queue.pending;
  }

  close(): Promise<void> {
    return this.queue.close();
  }
}
