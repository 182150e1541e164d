/**
 * Team budgets, enforced before a proxy request goes upstream (the gateway's SpendGuard port,
 * implemented structurally here). A request made with a key of a team — or of a sub-team of a
 * team — whose period spend has reached its `maxBudgetCents` is refused with 429
 * `rate_limit_error` naming the team's budget, `retry_after_secs` = until the period resets, and
 * `x-should-retry: false` with a Retry-After of at most 8 s (so SDKs fail at once instead of
 * sleeping until the period's end).
 *
 * Spend per budgeted team = the `cost_usd` of the usage records of every key of the team and its
 * live sub-teams since the start of the team's period, read once (after the gateway's buffered
 * records are written) and then kept current in memory: each admitted request reserves the
 * estimated cost of a request to its model (the running mean of settled costs of that model in
 * the workspace; 0 before any) on every budgeted team above its key, and its settle replaces the
 * reservation with the real cost. Admission compares spend + reservations with the budget, so a
 * burst can overshoot by at most the in-flight requests' cost beyond their estimates. Any change
 * to teams or key links drops the workspace's state; it is rebuilt from the records on next use.
 */
import { ApiError } from "../core/errors";
import type { ForTenant } from "../storage/scoped";
import type { UsageReader } from "./ports";
import type { TeamStore } from "./teams/store";
import { centsOf, periodOf } from "./teams/period";
import { iso, type BudgetPeriod, type WallClock } from "./types";

/** What the gateway passes in (its Spender). */
export interface SpenderLike {
  tenantId: string;
  sub: string;
  keyId?: string;
}

export interface Ticket {
  settle(costUsd: number): void;
}

interface Budget {
  teamId: string;
  name: string;
  maxCents: number;
  period: BudgetPeriod;
}

interface Spent {
  end: number;
  usd: number;
}

interface WorkspaceState {
  /** key id → the budgeted teams above it, nearest first ([] = none) */
  chains: Map<string, Budget[]>;
  spent: Map<string, Spent>;
}

const FREE: Ticket = { settle() {} };
/** weight of a new cost in the running mean */
const ALPHA = 0.2;

export class BudgetGuard {
  private readonly workspaces = new Map<string, WorkspaceState>();
  /** tenant → team → reserved USD of admitted, unsettled requests (survives state drops) */
  private readonly reserved = new Map<string, Map<string, number>>();
  /** tenant\0model → running mean cost (USD) */
  private readonly estimates = new Map<string, number>();

  constructor(
    private readonly teams: ForTenant<TeamStore>,
    private readonly usage: UsageReader,
    private readonly clock: WallClock,
  ) {}

  /** Teams or key links of a workspace changed: rebuild its state on next use. */
  invalidate(tenantId: string) {
    this.workspaces.delete(tenantId);
  }

  admit(spender: SpenderLike, model: string): Ticket | Promise<Ticket> {
    const keyId = spender.keyId;
    if (keyId === undefined) return FREE;
    const tenantId = spender.tenantId;
    let ws = this.workspaces.get(tenantId);
    if (!ws) this.workspaces.set(tenantId, (ws = { chains: new Map(), spent: new Map() }));
    const chain = ws.chains.get(keyId);
    // the chain and its spend come from the stores once (async), then admission answers from memory
    if (!chain) {
      const w = ws;
      return this.chainOf(tenantId, keyId).then((c) => (w.chains.set(keyId, c), this.admit(spender, model)));
    }
    if (chain.length === 0) return FREE;

    const nowMs = this.clock();
    let stale: Budget[] | undefined;
    for (const b of chain) if (!((ws.spent.get(b.teamId)?.end ?? 0) > nowMs)) (stale ??= []).push(b);
    if (stale) {
      const w = ws;
      return Promise.all(stale.map((b) => this.loadSpent(w, tenantId, b, nowMs))).then(() => this.admit(spender, model));
    }
    let reserved = this.reserved.get(tenantId);
    if (!reserved) this.reserved.set(tenantId, (reserved = new Map()));
    for (const b of chain) {
      const spent = this.spentOf(ws, tenantId, b, nowMs);
      const held = reserved.get(b.teamId) ?? 0;
      if (centsOf(spent.usd + held) >= b.maxCents) throw exceeded(b, centsOf(spent.usd), spent.end, nowMs);
    }
    const estimateKey = `${tenantId}\u0000${model}`;
    const estimate = this.estimates.get(estimateKey) ?? 0;
    for (const b of chain) reserved.set(b.teamId, (reserved.get(b.teamId) ?? 0) + estimate);
    let settled = false;
    return {
      settle: (costUsd: number) => {
        if (settled) return;
        settled = true;
        for (const b of chain) {
          const left = (reserved.get(b.teamId) ?? 0) - estimate;
          if (left > 1e-12) reserved.set(b.teamId, left);
          else reserved.delete(b.teamId);
          // the state may have been rebuilt since admission: the rebuild read the records written
          // before this request's record, so its cost is added to whatever state is current
          const spent = this.workspaces.get(tenantId)?.spent.get(b.teamId);
          if (spent) spent.usd += costUsd;
        }
        if (costUsd > 0) {
          const prev = this.estimates.get(estimateKey);
          this.estimates.set(estimateKey, prev === undefined ? costUsd : prev + ALPHA * (costUsd - prev));
        }
      },
    };
  }

  /** The live budgeted teams from the key's team up to the root. */
  private async chainOf(tenantId: string, keyId: string): Promise<Budget[]> {
    const s = this.teams(tenantId);
    const out: Budget[] = [];
    const seen = new Set<string>();
    let id = await s.teamOfKey(keyId);
    while (id !== undefined && !seen.has(id)) {
      seen.add(id);
      const t = await s.get(id);
      if (!t) break;
      if (t.maxBudgetCents !== null) out.push({ teamId: t.id, name: t.name, maxCents: t.maxBudgetCents, period: t.budgetPeriod });
      id = t.parentTeamId ?? undefined;
    }
    return out;
  }

  /** the current period's spend, loaded by admit before it asks */
  private spentOf(ws: WorkspaceState, _tenantId: string, b: Budget, _nowMs: number): Spent {
    return ws.spent.get(b.teamId)!;
  }

  private async loadSpent(ws: WorkspaceState, tenantId: string, b: Budget, nowMs: number): Promise<void> {
    const { start, end } = periodOf(b.period, nowMs);
    const s = this.teams(tenantId);
    const keyIds = await s.keyIdsOf(await s.subtree(b.teamId));
    this.usage.flush();
    ws.spent.set(b.teamId, { end, usd: this.usage.spendUsd(tenantId, keyIds, iso(start)) });
  }
}

/**
 * The longest Retry-After a budget refusal carries. The refusal also says `x-should-retry: false`,
 * which the official SDKs obey (no retry at all); a client that reads only Retry-After re-asks
 * within this (a budget can be raised, or the key moved, at any time: the period's end is an upper
 * bound, not the wait). 8 s is the SDKs' own cap: openai-node 6 and @anthropic-ai/sdk 1 back off at
 * most `maxRetryDelay` = 8 s by themselves but sleep whatever a Retry-After says (no cap of their
 * own on it); the Python SDKs and openai-node ≤ 4 ignore one above 60 s.
 */
export const BUDGET_RETRY_AFTER_CAP_SECS = 8;

function exceeded(b: Budget, spentCents: number, end: number, nowMs: number): ApiError {
  const untilReset = Math.max(1, Math.ceil((end - nowMs) / 1000));
  return new ApiError(
    "rate_limit_error",
    `budget exceeded: team "${b.name}" (${b.teamId}) has spent ${spentCents} of its ${b.period} budget of ${b.maxCents} cents; it resets at ${iso(end)}`,
    // doc1's retry_after_secs: when retrying can succeed without anyone raising the budget
    { retry_after_secs: untilReset },
    {
      "retry-after": String(Math.min(untilReset, BUDGET_RETRY_AFTER_CAP_SECS)),
      "x-should-retry": "false",
      // the request-rate headers the front door adds would say requests are left: none are, until the period resets
      "x-ratelimit-remaining": "0",
      "x-ratelimit-reset": String(untilReset),
    },
  );
}
