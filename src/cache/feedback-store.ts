/**
 * Wrong-hit feedback in the database (issue 25; tables from CACHE_MIGRATIONS 0004_feedback), over
 * the tenant-bound async handle (every statement scoped by $tenant), one SQL text for bun:sqlite
 * and PostgreSQL:
 *  - cache_feedback_state: a tenant's verdict counters and how far they raised its operating point
 *    (a row exists once the tenant gave a verdict);
 *  - cache_feedback_negatives: the (entry, question) pairs a tenant reported wrong, at most `max`
 *    per tenant (the oldest dropped in the statement that adds one);
 *  - cache_feedback_requests: the lookups that hit, by request id (what a verdict needs on a
 *    replica, or after a restart, that does not remember the request), pruned by age and count.
 *    Written for every hit, so kept to two B-trees (CACHE_MIGRATIONS 0005): the table keyed
 *    (tenant_id, request_id) — WITHOUT ROWID on SQLite — and the age index (tenant_id, created_at,
 *    request_id), which serves both prunes.
 * Vectors are raw little-endian f32 (BLOB / BYTEA).
 */
import type { AsyncStorage, AsyncTenantDb } from "../storage/async";
import { vectorBytes, vectorOf } from "../storage/dialect";

/** A tenant's verdict counters and operating-point state. */
export interface FeedbackCounters {
  wrong: number;
  right: number;
  /** semantic hits served since the tenant's first verdict */
  hits: number;
  /** hits (plus 2 per "right") since the point last moved */
  sinceStep: number;
  /** added to the configured point (>= 0) */
  raise: number;
}

export interface StoredNegative {
  entryId: string;
  surface: string;
  vec: Float32Array | null;
}

/** A lookup that hit, as a verdict needs it. */
export interface StoredHit {
  requestId: string;
  caller: string | null;
  tier: "exact" | "semantic" | "l2_context";
  entryId: string;
  query: string | null;
  queryVec: Float32Array | null;
  createdAt: number;
}

const fromBlob = (b: Uint8Array | null): Float32Array | null => (b ? vectorOf(new Uint8Array(b)) : null);
const toBlob = (v: Float32Array | null | undefined) => (v ? vectorBytes(v) : null);

export class FeedbackStore {
  constructor(private readonly t: AsyncTenantDb) {}

  async counters(): Promise<FeedbackCounters | undefined> {
    const r = await this.t.get<FeedbackCounters>(
      `SELECT wrong, right_verdicts AS "right", hits, since_step AS "sinceStep", raised_by AS "raise" FROM cache_feedback_state WHERE tenant_id = $tenant`,
    );
    return r && { wrong: Number(r.wrong), right: Number(r.right), hits: Number(r.hits), sinceStep: Number(r.sinceStep), raise: Number(r.raise) };
  }

  async putCounters(c: FeedbackCounters, now: number): Promise<void> {
    await this.t.run(
      `INSERT INTO cache_feedback_state (tenant_id, wrong, right_verdicts, hits, since_step, raised_by, updated_at)
       VALUES ($tenant, $wrong, $right, $hits, $since, $raise, $now)
       ON CONFLICT (tenant_id) DO UPDATE SET wrong = excluded.wrong, right_verdicts = excluded.right_verdicts, hits = excluded.hits,
         since_step = excluded.since_step, raised_by = excluded.raised_by, updated_at = excluded.updated_at`,
      { wrong: c.wrong, right: c.right, hits: c.hits, since: c.sinceStep, raise: c.raise, now },
    );
  }

  /** the tenant's negatives, oldest first */
  async negatives(): Promise<StoredNegative[]> {
    const rows = await this.t.all<{ entryId: string; surface: string; v: Uint8Array | null }>(
      `SELECT entry_id AS "entryId", surface, query_vec AS v FROM cache_feedback_negatives WHERE tenant_id = $tenant ORDER BY id`,
    );
    return rows.map((r) => ({ entryId: r.entryId, surface: r.surface, vec: fromBlob(r.v) }));
  }

  /** Add a negative and drop the tenant's oldest beyond `max` (the database's count decides: replicas adding at once stay within it). */
  async addNegative(n: StoredNegative, now: number, max: number): Promise<void> {
    await this.t.run(
      `INSERT INTO cache_feedback_negatives (tenant_id, entry_id, surface, query_vec, created_at) VALUES ($tenant, $entry, $surface, $v, $now)`,
      { entry: n.entryId, surface: n.surface, v: toBlob(n.vec), now },
    );
    await this.t.run(
      `DELETE FROM cache_feedback_negatives WHERE tenant_id = $tenant AND id IN (
         SELECT id FROM cache_feedback_negatives WHERE tenant_id = $tenant ORDER BY id ASC
         LIMIT (SELECT CASE WHEN COUNT(*) > $max THEN COUNT(*) - $max ELSE 0 END FROM cache_feedback_negatives WHERE tenant_id = $tenant))`,
      { max },
    );
  }

  async hit(requestId: string): Promise<(StoredHit & { verdict: "wrong" | "right" | null }) | undefined> {
    const r = await this.t.get<{ caller: string | null; tier: StoredHit["tier"]; entryId: string; query: string | null; v: Uint8Array | null; verdict: "wrong" | "right" | null; createdAt: number }>(
      `SELECT caller, tier, entry_id AS "entryId", query_text AS query, query_vec AS v, verdict, created_at AS "createdAt"
       FROM cache_feedback_requests WHERE tenant_id = $tenant AND request_id = $id`,
      { id: requestId },
    );
    return r && { requestId, caller: r.caller, tier: r.tier, entryId: r.entryId, query: r.query, queryVec: fromBlob(r.v), createdAt: Number(r.createdAt), verdict: r.verdict };
  }

  /**
   * Record the verdict on a request once: its row is written with the verdict when it is not there
   * yet (the hit was not flushed), or given the verdict when it has none. False: already judged
   * (here or on another replica).
   */
  async claim(h: StoredHit, verdict: "wrong" | "right"): Promise<boolean> {
    const r = await this.t.run(
      `INSERT INTO cache_feedback_requests (tenant_id, request_id, caller, tier, entry_id, query_text, query_vec, verdict, created_at)
       VALUES ($tenant, $id, $caller, $tier, $entry, $query, $v, $verdict, $created)
       ON CONFLICT (tenant_id, request_id) DO UPDATE SET verdict = excluded.verdict WHERE cache_feedback_requests.verdict IS NULL`,
      { ...hitParams(h), verdict },
    );
    return r.changes > 0;
  }

  /** Forget everything of the tenant's feedback (its cache was purged). */
  async forget(): Promise<void> {
    await this.t.tx(async () => {
      await this.t.run("DELETE FROM cache_feedback_negatives WHERE tenant_id = $tenant");
      await this.t.run("DELETE FROM cache_feedback_state WHERE tenant_id = $tenant");
      await this.t.run("DELETE FROM cache_feedback_requests WHERE tenant_id = $tenant");
    });
  }
}

const hitParams = (h: StoredHit) => ({
  id: h.requestId,
  caller: h.caller,
  tier: h.tier,
  entry: h.entryId,
  query: h.query,
  v: toBlob(h.queryVec),
  created: h.createdAt,
});

/** most rows per INSERT of a batch of hits (7 parameters each: far below either database's limit) */
const HITS_PER_INSERT = 128;
/** the parameter names of row i of an INSERT, built once (no name is formatted per row) */
const HIT_PARAMS: string[][] = Array.from({ length: HITS_PER_INSERT }, (_, i) => ["id", "caller", "tier", "entry", "query", "v", "created"].map((k) => `${k}${i}`));
const hitInserts = new Map<number, string>();
/**
 * The INSERT of `n` rows (built once per n and shape; n is a power of two, so at most 16 texts, each
 * prepared once). `bare`: exact hits, which carry no question or vector — tier, question and vector
 * are literals, 4 parameters a row instead of 7 (binding is most of a row's cost besides the B-trees).
 */
function hitInsertOf(n: number, bare: boolean): string {
  const key = bare ? -n : n;
  let sql = hitInserts.get(key);
  if (!sql) {
    const values = Array.from({ length: n }, (_, i) => {
      const [id, caller, tier, entry, query, v, created] = HIT_PARAMS[i]!.map((k) => `$${k}`);
      return bare ? `($tenant, ${id}, ${caller}, 'exact', ${entry}, NULL, NULL, NULL, ${created})` : `($tenant, ${id}, ${caller}, ${tier}, ${entry}, ${query}, ${v}, NULL, ${created})`;
    });
    sql = `INSERT INTO cache_feedback_requests (tenant_id, request_id, caller, tier, entry_id, query_text, query_vec, verdict, created_at)
       VALUES ${values.join(", ")} ON CONFLICT (tenant_id, request_id) DO NOTHING`;
    hitInserts.set(key, sql);
  }
  return sql;
}

const isBare = (h: StoredHit) => h.tier === "exact" && h.query === null && h.queryVec === null;

/** INSERTs of 128, 64, … 1 rows of one shape */
async function insertHits(t: AsyncTenantDb, hits: StoredHit[], bare: boolean): Promise<void> {
  let at = 0;
  while (at < hits.length) {
    let n = HITS_PER_INSERT;
    while (n > hits.length - at) n >>= 1;
    // $tenant bound here: the handle then uses the object as it is (no copy of n × 7 parameters)
    const params: Record<string, unknown> = { tenant: t.tenantId };
    for (let i = 0; i < n; i++) {
      const h = hits[at + i]!;
      const k = HIT_PARAMS[i]!;
      params[k[0]!] = h.requestId;
      params[k[1]!] = h.caller;
      params[k[3]!] = h.entryId;
      params[k[6]!] = h.createdAt;
      if (bare) continue;
      params[k[2]!] = h.tier;
      params[k[4]!] = h.query;
      params[k[5]!] = toBlob(h.queryVec);
    }
    await t.run(hitInsertOf(n, bare), params as never);
    at += n;
  }
}

/**
 * Write a batch of hits of one tenant (AsyncWriteBehind, inside its transaction): exact hits, then
 * the others, each in INSERTs of 128, 64, … 1 rows (a batch of any size uses the same few statement
 * texts, prepared once), a row already there (judged before this batch came) kept; then the tenant's
 * rows older than `before` go, and — when `prune` — those beyond the newest `max` (newest by
 * created_at, then request_id; a walk over `max` index entries: the caller runs it every so many
 * rows, not every batch, so the bound may be passed by that many between prunes).
 */
export async function writeHits(t: AsyncTenantDb, hits: StoredHit[], before: number, max: number, prune = true): Promise<void> {
  let bare = 0;
  for (const h of hits) if (isBare(h)) bare++;
  if (bare === hits.length || bare === 0) await insertHits(t, hits, bare > 0);
  else {
    await insertHits(t, hits.filter(isBare), true);
    await insertHits(t, hits.filter((h) => !isBare(h)), false);
  }
  await t.run("DELETE FROM cache_feedback_requests WHERE tenant_id = $tenant AND created_at < $before", { before });
  if (!prune) return;
  // the newest `max` stay: the (max+1)-th newest (created_at, request_id) and everything older go —
  // one range of the age index (which ends in request_id, so rows of one millisecond are ordered too)
  await t.run(
    `DELETE FROM cache_feedback_requests WHERE tenant_id = $tenant AND (created_at, request_id) <= (
       SELECT created_at, request_id FROM cache_feedback_requests WHERE tenant_id = $tenant
       ORDER BY created_at DESC, request_id DESC LIMIT 1 OFFSET $max)`,
    { max },
  );
}

/** Remembered hits of every tenant older than `before` (a tenant that stopped sending requests keeps none forever). */
export async function pruneHits(storage: AsyncStorage, before: number): Promise<number> {
  return (
    await storage
      .global("cache feedback: remembered hits of every tenant past their age, pruned in one statement")
      // tenant by tenant through the age index (each next tenant id found by one seek): no index on
      // created_at alone is kept up by every hit for this once-a-minute statement
      .run(
        `WITH RECURSIVE tenants (id) AS (
           SELECT MIN(tenant_id) FROM cache_feedback_requests
           UNION ALL
           SELECT (SELECT MIN(tenant_id) FROM cache_feedback_requests WHERE tenant_id > tenants.id) FROM tenants WHERE tenants.id IS NOT NULL)
         DELETE FROM cache_feedback_requests WHERE tenant_id IN (SELECT id FROM tenants) AND created_at < $before`,
        { before },
      )
  ).changes;
}
