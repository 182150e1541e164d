/**
 * Usage accounting: one row per proxied request (tenant, model, tokens in/out, cache status,
 * latency, list-price cost and cost saved, whether the model's price was known). Analytics and budgets read `usage_records`.
 * Writes are batched off the request path (storage/write-behind-async.ts): buffered and flushed in
 * one transaction every FLUSH_MS (or at BATCH rows, and on shutdown), so readers see a row within
 * ~FLUSH_MS; the readers that must see every row (usage API, budgets, key analytics) await a flush
 * first. A crash loses at most the last FLUSH_MS of records (what was queued).
 *
 * Each tenant's rows go in as multi-row INSERTs (chunks of a power of two rows, at most CHUNK: few
 * statement texts, each prepared once) on both backends. Record ids are UUIDv7 (time-ordered, and
 * monotonic within a process), so "newest first" is `created_at DESC, id DESC` without SQLite's rowid.
 */
import { parameterOrder, type AsyncStorage, type AsyncTenantDb, type Values } from "../storage/async";
import { AsyncWriteBehind } from "../storage/write-behind-async";
import { now } from "../core/ids";
import { costAt, pricedAt, PriceTable } from "./prices";
import { addToRollups } from "./rollups";

export interface UsageRecord {
  tenantId: string;
  /** the API key the request authenticated with, if any */
  keyId?: string;
  requestId: string;
  style: string;
  provider: string;
  endpoint: string;
  model: string;
  cacheStatus: "HIT" | "MISS" | "BYPASS";
  cacheTier?: string;
  streamed: boolean;
  inputTokens: number;
  outputTokens: number;
  latencyMs: number;
  /** the deployment that answered (the provider's name, or a fallback's label); none on a hit */
  deployment?: string;
  /** the model the answering upstream request named (differs from `model` after a fallback to another model) */
  upstreamModel?: string;
  /** upstream attempts, retries and fallbacks included (0 on a hit) */
  attempts?: number;
  /** the cache entry that answered a hit */
  cacheEntryId?: string;
  /** a hit's similarity, or a miss's nearest cached question's (none when bypassed or nothing was compared) */
  similarity?: number;
  /** the learned stage's probability of same meaning, when it decided the hit */
  learnedScore?: number;
  /** the operating point (cosine floor) the lookup used */
  cachePoint?: number;
}

export interface UsageRow extends UsageRecord {
  id: string;
  createdAt: string;
  /** list-price cost of what went upstream (0 on a hit) */
  costUsd: number;
  /** list-price cost a hit avoided (0 otherwise) */
  costSavedUsd: number;
  /** false: the model has no known price, so costUsd / costSavedUsd are 0 for want of one (default true) */
  priced?: boolean;
}

const COLUMNS = [
  "id", "tenant_id", "created_at", "request_id", "key_id", "style", "provider", "endpoint", "model", "cache_status", "cache_tier", "streamed", "input_tokens",
  "output_tokens", "latency_ms", "cost_usd", "cost_saved_usd", "deployment", "upstream_model", "attempts", "priced", "cache_entry_id", "similarity", "learned_score", "cache_point",
] as const;

/** most rows per INSERT statement (25 parameters each) */
const CHUNK = 64;
const insertTexts = new Map<number, string>();
/** the INSERT of `n` rows: `($id_0, $tenant, …), ($id_1, $tenant, …)` (built once per n) */
function insertOf(n: number): string {
  let sql = insertTexts.get(n);
  if (!sql) {
    const tuple = (i: number) => `(${COLUMNS.map((c) => (c === "tenant_id" ? "$tenant" : `$${c}_${i}`)).join(", ")})`;
    sql = `INSERT INTO usage_records (${COLUMNS.join(", ")}) VALUES ${Array.from({ length: n }, (_, i) => tuple(i)).join(", ")}`;
    insertTexts.set(n, sql);
  }
  return sql;
}

/**
 * Where row i's column c goes among an INSERT's values (runValues: parameterOrder), for the INSERT of n rows: slots[i * COLUMNS_PER_ROW + c] (built once per n).
 */
const COLUMNS_PER_ROW = COLUMNS.length - 1;
const slotTables = new Map<number, Int32Array>();
function slotsOf(n: number): Int32Array {
  let slots = slotTables.get(n);
  if (!slots) {
    const at = new Map(parameterOrder(insertOf(n)).map((name, k) => [name, k]));
    const own = COLUMNS.filter((c) => c !== "tenant_id");
    slots = new Int32Array(n * COLUMNS_PER_ROW);
    for (let i = 0; i < n; i++) for (let c = 0; c < own.length; c++) slots[i * COLUMNS_PER_ROW + c] = at.get(`${own[c]}_${i}`)!;
    slotTables.set(n, slots);
  }
  return slots;
}

/** row i's values of an INSERT, written into `into` at their slots (COLUMNS order without tenant_id; the tenant's own slot is the handle's) */
function valuesOf(r: UsageRow, i: number, slots: Int32Array, into: Values) {
  const o = i * COLUMNS_PER_ROW;
  into[slots[o]!] = r.id;
  into[slots[o + 1]!] = r.createdAt;
  into[slots[o + 2]!] = r.requestId;
  into[slots[o + 3]!] = r.keyId ?? null;
  into[slots[o + 4]!] = r.style;
  into[slots[o + 5]!] = r.provider;
  into[slots[o + 6]!] = r.endpoint;
  into[slots[o + 7]!] = r.model;
  into[slots[o + 8]!] = r.cacheStatus;
  into[slots[o + 9]!] = r.cacheTier ?? null;
  into[slots[o + 10]!] = r.streamed ? 1 : 0;
  into[slots[o + 11]!] = r.inputTokens;
  into[slots[o + 12]!] = r.outputTokens;
  into[slots[o + 13]!] = r.latencyMs;
  into[slots[o + 14]!] = r.costUsd;
  into[slots[o + 15]!] = r.costSavedUsd;
  into[slots[o + 16]!] = r.deployment ?? null;
  into[slots[o + 17]!] = r.upstreamModel ?? null;
  into[slots[o + 18]!] = r.attempts ?? 0;
  into[slots[o + 19]!] = r.priced === false ? 0 : 1;
  into[slots[o + 20]!] = r.cacheEntryId ?? null;
  into[slots[o + 21]!] = r.similarity ?? null;
  into[slots[o + 22]!] = r.learnedScore ?? null;
  into[slots[o + 23]!] = r.cachePoint ?? null;
}

/** One tenant's usage records. */
export class UsageStore {
  /** `addRollups`: the writer adds its rows to the overview's rollups (false: records only, for a database without them) */
  constructor(
    private readonly db: AsyncTenantDb,
    private readonly addRollups = true,
  ) {}

  /** a tenant's store on this storage */
  static of(storage: AsyncStorage, tenantId: string): UsageStore {
    return new UsageStore(storage.tenant(tenantId));
  }

  insert(r: UsageRow): Promise<void> {
    return this.insertMany([r]);
  }

  /** the rows in order, as INSERTs of a power of two rows each (64, 32, … 1) */
  async insertMany(rows: readonly UsageRow[]): Promise<void> {
    let at = 0;
    while (at < rows.length) {
      let n = CHUNK;
      while (n > rows.length - at) n >>= 1;
      // by position (no object of n × 24 names to build and read back); the handle fills the tenant's slot
      const slots = slotsOf(n);
      const values: Values = new Array(n * COLUMNS_PER_ROW + 1);
      for (let i = 0; i < n; i++) valuesOf(rows[at + i]!, i, slots, values);
      await this.db.runValues(insertOf(n), values);
      at += n;
    }
    if (this.addRollups) await addToRollups(this.db, rows);
  }

  async list(limit = 100): Promise<UsageRow[]> {
    return (await this.db.all<any>(`SELECT * FROM usage_records WHERE tenant_id = $tenant ORDER BY created_at DESC, id DESC LIMIT $limit`, { limit })).map((r) => ({
        id: r.id,
        tenantId: r.tenant_id,
        createdAt: r.created_at,
        requestId: r.request_id,
        keyId: r.key_id ?? undefined,
        style: r.style,
        provider: r.provider,
        endpoint: r.endpoint,
        model: r.model,
        cacheStatus: r.cache_status,
        cacheTier: r.cache_tier ?? undefined,
        streamed: r.streamed === 1,
        inputTokens: r.input_tokens,
        outputTokens: r.output_tokens,
        latencyMs: r.latency_ms,
        costUsd: r.cost_usd,
        costSavedUsd: r.cost_saved_usd,
        deployment: r.deployment ?? undefined,
        upstreamModel: r.upstream_model ?? undefined,
        attempts: r.attempts,
        priced: r.priced === 1,
        cacheEntryId: r.cache_entry_id ?? undefined,
        similarity: r.similarity ?? undefined,
        learnedScore: r.learned_score ?? undefined,
        cachePoint: r.cache_point ?? undefined,
      }));
  }
}

export class UsageRecorder {
  static FLUSH_MS = 200;
  static BATCH = 500;
  private readonly queue: AsyncWriteBehind<UsageRow>;

  constructor(
    private readonly storage: AsyncStorage,
    onError: (e: unknown, lostRows?: number) => void = () => {},
    private readonly prices: PriceTable = new PriceTable(),
  ) {
    this.queue = new AsyncWriteBehind(storage, { write: (db, rows) => new UsageStore(db).insertMany(rows), flushMs: UsageRecorder.FLUSH_MS, max: UsageRecorder.BATCH, onError });
  }

  store(tenantId: string) {
    return UsageStore.of(this.storage, tenantId);
  }

  /** Queue a record. It is taken over (completed in place and queued): pass a fresh object each time. */
  record(r: UsageRecord) {
    // an upstream answer costs what the answering model costs; a hit saved what the asked-for model would have cost
    const hit = r.cacheStatus === "HIT";
    const model = hit ? r.model : (r.upstreamModel ?? r.model);
    // one price lookup for both (costOf and isPriced would each look the model up)
    const price = this.prices.priceOf(model);
    const cost = costAt(price, r.inputTokens, r.outputTokens);
    const priced = pricedAt(price, r.inputTokens, r.outputTokens);
    // the record becomes the queued row (the caller hands over a fresh object: no copy of its ~20 fields per request)
    const row = r as UsageRow;
    row.id = Bun.randomUUIDv7();
    row.createdAt = now();
    row.costUsd = hit ? 0 : cost;
    row.costSavedUsd = hit ? cost : 0;
    row.priced = priced;
    this.queue.push(r.tenantId, row);
  }

  /** Write what is buffered (one tenant's rows, or everyone's); resolves when it is written. */
  flush(tenantId?: string): Promise<void> {
    return this.queue.flush(tenantId);
  }

  /** Flush what is buffered and stop recording (before the database closes). */
  close(): Promise<void> {
    return this.queue.close();
  }
}
