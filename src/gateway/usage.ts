/**
 * Usage accounting: one row per proxied request (tenant, model, tokens in/out, cache status,
 * latency, list-price cost and cost saved, whether the model's price was known). Analytics and budgets read `usage_records`.
 * Writes are batched off the request path (storage/write-behind.ts): buffered and flushed in one
 * transaction every FLUSH_MS (or at BATCH rows, and on shutdown), so readers see a row within
 * ~FLUSH_MS; the readers that must see every row (usage API, budgets, key analytics) flush first.
 */
import type { Storage, TenantDb } from "../storage/scoped";
import { WriteBehind } from "../storage/write-behind";
import { uuid, now } from "../core/ids";
import { PriceTable } from "./prices";

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

/** One tenant's usage records. */
export class UsageStore {
  constructor(private readonly db: TenantDb) {}
  insert(r: UsageRow) {
    this.db.run(
      `INSERT INTO usage_records (id, tenant_id, created_at, request_id, key_id, style, provider, endpoint, model, cache_status, cache_tier, streamed, input_tokens, output_tokens, latency_ms, cost_usd, cost_saved_usd, deployment, upstream_model, attempts, priced, cache_entry_id, similarity, learned_score, cache_point)
       VALUES ($id, $tenant, $at, $rid, $key, $style, $provider, $endpoint, $model, $status, $tier, $streamed, $in, $out, $latency, $cost, $saved, $deployment, $upmodel, $attempts, $priced, $entry, $similarity, $learned, $point)`,
      {
        id: r.id,
        at: r.createdAt,
        rid: r.requestId,
        key: r.keyId ?? null,
        style: r.style,
        provider: r.provider,
        endpoint: r.endpoint,
        model: r.model,
        status: r.cacheStatus,
        tier: r.cacheTier ?? null,
        streamed: r.streamed ? 1 : 0,
        in: r.inputTokens,
        out: r.outputTokens,
        latency: r.latencyMs,
        cost: r.costUsd,
        saved: r.costSavedUsd,
        deployment: r.deployment ?? null,
        upmodel: r.upstreamModel ?? null,
        attempts: r.attempts ?? 0,
        priced: r.priced === false ? 0 : 1,
        entry: r.cacheEntryId ?? null,
        similarity: r.similarity ?? null,
        learned: r.learnedScore ?? null,
        point: r.cachePoint ?? null,
      },
    );
  }
  list(limit = 100): UsageRow[] {
    return this.db
      .all<any>(`SELECT * FROM usage_records WHERE tenant_id = $tenant ORDER BY created_at DESC, rowid DESC LIMIT $limit`, { limit })
      .map((r) => ({
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
  private readonly queue: WriteBehind<UsageRow>;

  constructor(
    private readonly storage: Storage,
    onError: (e: unknown) => void = () => {},
    private readonly prices: PriceTable = new PriceTable(),
  ) {
    this.queue = new WriteBehind(storage, { write: (db, rows) => rows.forEach((r) => new UsageStore(db).insert(r)), flushMs: UsageRecorder.FLUSH_MS, max: UsageRecorder.BATCH, onError });
  }

  store(tenantId: string) {
    return new UsageStore(this.storage.tenant(tenantId));
  }

  record(r: UsageRecord) {
    // an upstream answer costs what the answering model costs; a hit saved what the asked-for model would have cost
    const hit = r.cacheStatus === "HIT";
    const model = hit ? r.model : (r.upstreamModel ?? r.model);
    const cost = this.prices.costOf(model, r.inputTokens, r.outputTokens);
    const priced = this.prices.isPriced(model, r.inputTokens, r.outputTokens);
    this.queue.push(r.tenantId, { ...r, id: uuid(), createdAt: now(), costUsd: hit ? 0 : cost, costSavedUsd: hit ? cost : 0, priced });
  }

  flush() {
    this.queue.flush();
  }

  /** Flush what is buffered and stop recording (before the database closes). */
  close() {
    this.queue.close();
  }
}
