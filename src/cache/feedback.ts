/**
 * Wrong-hit feedback (POST /api/v1/cache/feedback, issue 25): a client says a hit served the wrong
 * answer ("wrong") or the right one ("right"), naming the request by its X-Request-ID.
 *
 *   - every lookup that carries a request id is remembered (bounded LRU over all tenants) with what it
 *     did: hit or miss, the entry it served, the question and its vector;
 *   - "wrong" on a semantic / context hit remembers the pair as a negative of the tenant: that entry is
 *     never served again to the same question or a near-identical one (cosine >= NEAR_IDENTICAL or the
 *     same text up to case and punctuation). "wrong" on an exact hit deletes the entry (the caller does);
 *   - the tenant's operating point (a cosine floor under every semantic decision) rises by STEP_UP on
 *     each "wrong" while the tenant's reported wrong-hit rate is above its budget (`maxWrongHitRate`), and
 *     falls back by STEP_DOWN toward the configured point only after 1 / maxWrongHitRate hits since the
 *     last step without a "wrong" ("right" verdicts count twice): it tightens at once and loosens slowly.
 *
 * Bounded: at most MAX_NEGATIVES negatives per tenant (oldest dropped), MAX_TENANTS tenants' state
 * (least recently used dropped), MAX_REQUESTS remembered requests (a report must come while the request
 * is among the last 20 000 looked up). State is per tenant: one tenant's
 * verdicts never move another's point. Kept in memory (a restart forgets it).
 */
import { LRUCache } from "lru-cache";
import { dot } from "../core/vectors";
import { surfaceForm } from "./verify/text";
import { ApiError } from "../core/errors";

export const NEAR_IDENTICAL = 0.97;
export const STEP_UP = 0.01;
export const STEP_DOWN = 0.002;
export const MAX_POINT = 0.995;
const MAX_NEGATIVES = 1000;
const MAX_TENANTS = 10_000;
/** remembered requests over all tenants (a hit holds its query vector: 2 KB at 512 dimensions, so <= ~40 MB) */
const MAX_REQUESTS = 20_000;

export interface RememberedLookup {
  tenantId: string;
  /** who made the request (API key id, or the JWT subject): they may report on it */
  caller?: string;
  hit: boolean;
  tier?: "exact" | "semantic" | "l2_context";
  entryId?: string;
  query?: string;
  queryVec?: Float32Array;
  /** the verdict already given (a request is judged once) */
  verdict?: "wrong" | "right";
}

interface Negative {
  entryId: string;
  surface: string;
  vec: Float32Array | null;
}

interface TenantFeedback {
  negatives: Negative[];
  wrong: number;
  right: number;
  /** semantic hits served since the tenant's state was created */
  hits: number;
  /** hits (plus 2 per "right") since the point last moved */
  sinceStep: number;
  /** added to the configured point (>= 0) */
  raise: number;
}

export interface FeedbackStats {
  wrong: number;
  right: number;
  /** the operating point (cosine floor) the tenant's lookups use now */
  point: number;
  /** how far reported wrong hits raised it above the configured point */
  raisedBy: number;
  maxWrongHitRate: number;
}

export class FeedbackBook {
  private readonly requests = new LRUCache<string, RememberedLookup>({ max: MAX_REQUESTS });
  private readonly tenants = new LRUCache<string, TenantFeedback>({ max: MAX_TENANTS });

  constructor(private readonly maxWrongHitRate: number) {}

  private state(tenantId: string): TenantFeedback {
    let s = this.tenants.get(tenantId);
    if (!s) {
      s = { negatives: [], wrong: 0, right: 0, hits: 0, sinceStep: 0, raise: 0 };
      this.tenants.set(tenantId, s);
    }
    return s;
  }

  remember(requestId: string, r: RememberedLookup) {
    this.requests.set(`${r.tenantId}\u0000${requestId}`, r);
    if (r.hit && r.tier !== "exact") this.served(r.tenantId, 1);
  }

  /** the remembered lookup of a request of this tenant (another tenant's request id is unknown here) */
  lookup(tenantId: string, requestId: string): RememberedLookup | undefined {
    return this.requests.get(`${tenantId}\u0000${requestId}`);
  }

  private served(tenantId: string, n: number) {
    const s = this.tenants.get(tenantId);
    if (!s) return; // a tenant that never reported anything stays at the configured point
    s.hits += n;
    s.sinceStep += n;
    const every = Math.ceil(1 / Math.max(1e-6, this.maxWrongHitRate));
    while (s.raise > 0 && s.sinceStep >= every) {
      s.raise = Math.max(0, s.raise - STEP_DOWN);
      s.sinceStep -= every;
    }
  }

  /** Record a verdict. Returns what the caller must do beyond this book (drop an exact entry). */
  judge(r: RememberedLookup, verdict: "wrong" | "right", configuredPoint: number): { deleteEntry: boolean } {
    const s = this.state(r.tenantId);
    r.verdict = verdict;
    if (verdict === "right") {
      s.right++;
      this.served(r.tenantId, 2);
      return { deleteEntry: false };
    }
    s.wrong++;
    if (r.tier === "exact") return { deleteEntry: true };
    if (r.entryId !== undefined && r.query !== undefined) {
      s.negatives.push({ entryId: r.entryId, surface: surfaceForm(r.query), vec: r.queryVec ?? null });
      if (s.negatives.length > MAX_NEGATIVES) s.negatives.splice(0, s.negatives.length - MAX_NEGATIVES);
    }
    // tighten while the reported wrong-hit rate is over budget (every "wrong" is over budget until
    // 1 / maxWrongHitRate hits have been served)
    if (s.wrong / Math.max(1, s.hits) > this.maxWrongHitRate) {
      s.raise = Math.min(Math.max(0, MAX_POINT - configuredPoint), s.raise + STEP_UP);
      s.sinceStep = 0;
    }
    return { deleteEntry: false };
  }

  /** the tenant's operating point: the configured one plus what wrong hits added */
  point(tenantId: string, configured: number): number {
    const s = this.tenants.get(tenantId);
    return s ? Math.min(Math.max(configured, MAX_POINT), configured + s.raise) : configured;
  }

  /** true when the tenant said this entry answered this question (or a near-identical one) wrongly */
  blocked(tenantId: string, entryId: string, query: string, vec: Float32Array | undefined): boolean {
    const s = this.tenants.get(tenantId);
    if (!s || s.negatives.length === 0) return false;
    let surface: string | undefined;
    for (const n of s.negatives) {
      if (n.entryId !== entryId) continue;
      surface ??= surfaceForm(query);
      if (n.surface === surface) return true;
      if (n.vec && vec && n.vec.length === vec.length && dot(n.vec, vec) >= NEAR_IDENTICAL) return true;
    }
    return false;
  }

  stats(tenantId: string, configured: number): FeedbackStats {
    const s = this.tenants.get(tenantId);
    return { wrong: s?.wrong ?? 0, right: s?.right ?? 0, point: this.point(tenantId, configured), raisedBy: s?.raise ?? 0, maxWrongHitRate: this.maxWrongHitRate };
  }

  /**
   * A verdict on a request of this tenant. `caller`: who reports (API key id or "sub:" + JWT subject);
   * `manager`: holds ManageConfig (may report on any of the tenant's requests); `deleteEntry` drops an
   * entry (a "wrong" exact hit). 404: unknown request id (or another tenant's); 403: someone else's
   * request; 409: the request did not hit, or was judged already.
   */
  report(
    tenantId: string,
    requestId: string,
    verdict: "wrong" | "right",
    caller: string | undefined,
    manager: boolean,
    configuredPoint: number,
    deleteEntry: (entryId: string) => void,
  ): FeedbackStats & { requestId: string; verdict: "wrong" | "right" } {
    const r = this.lookup(tenantId, requestId);
    if (!r) throw new ApiError("not_found", `request ${requestId} not found (no cache lookup of this tenant with that X-Request-ID is remembered)`);
    if (!manager && (!caller || r.caller !== caller)) throw new ApiError("authorization_error", "only the key that made the request, or ManageConfig, may report on it");
    if (!r.hit) throw new ApiError("conflict", `request ${requestId} was not served from the cache`);
    if (r.verdict) throw new ApiError("conflict", `request ${requestId} was already reported ${r.verdict}`);
    if (this.judge(r, verdict, configuredPoint).deleteEntry && r.entryId) deleteEntry(r.entryId);
    return { requestId, verdict, ...this.stats(tenantId, configuredPoint) };
  }

  forgetTenant(tenantId: string) {
    this.tenants.delete(tenantId);
  }
}
