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
 *
 * Several replicas (a shared store: Redis): the spend and the reservations of each budgeted team
 * and period live in one hash in the store, and admission is one Lua script over the key's whole
 * chain — check every team (spend + reservations < budget), then reserve the estimate on every
 * one, atomically — and settle another (spend += cost, reservation −= estimate). The database
 * stays the durable record: a hash that is missing (first use, a Redis flush, a restart) is seeded
 * from the usage records, and it expires every REBUILD_MS so the store converges to the records
 * even if a settle was lost in an outage. Overshoot bound, over any number of replicas: a request
 * is admitted only while spend + reservations < budget, so once settled spend reaches the budget
 * every replica refuses; what can be spent beyond it is at most the cost of the requests already
 * admitted (in flight) when it was reached, less their reserved estimates. Without the store:
 * `closed` refuses with 503, `open` admits on this replica's in-memory state (above).
 */
import { ApiError } from "../core/errors";
import { hotStateUnavailable, script, type FailPolicy, type SharedStore } from "../core/hotstate";
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

/** The shared store budgets are decided in when several replicas run. */
export interface SharedBudgets {
  store: SharedStore;
  fail: FailPolicy;
  prefix: string;
}

/** how long a team's spend in the store is believed before it is re-read from the usage records */
export const REBUILD_MS = 5 * 60_000;

/** KEYS: the chain's team hashes; ARGV: estimate (USD), then each team's budget (cents). */
const ADMIT = script(`
for i = 1, #KEYS do
  local v = redis.call('HMGET', KEYS[i], 's', 'r')
  if not v[1] then return {-1, i} end
  if (tonumber(v[1]) + tonumber(v[2] or '0')) * 100 >= tonumber(ARGV[i + 1]) - 1e-6 then return {0, i, v[1]} end
end
for i = 1, #KEYS do redis.call('HINCRBYFLOAT', KEYS[i], 'r', ARGV[1]) end
return {1}
`);

/** KEYS: a team hash; ARGV: spend read from the records (USD), time to live (ms). */
const SEED = script(`
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('HSET', KEYS[1], 's', ARGV[1], 'r', '0')
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 1
`);

/** KEYS: the chain's team hashes; ARGV: cost (USD), estimate reserved at admission (USD). */
const SETTLE = script(`
for i = 1, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 1 then
    redis.call('HINCRBYFLOAT', KEYS[i], 's', ARGV[1])
    if tonumber(redis.call('HINCRBYFLOAT', KEYS[i], 'r', -tonumber(ARGV[2]))) < 1e-12 then redis.call('HSET', KEYS[i], 'r', '0') end
  end
end
return 1
`);
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
    private readonly shared?: SharedBudgets,
  ) {}

  /** Teams or key links of a workspace changed: rebuild its state on next use. */
  invalidate(tenantId?: string) {
    if (tenantId === undefined) this.workspaces.clear();
    else this.workspaces.delete(tenantId);
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
    return this.shared ? this.admitShared(tenantId, ws, chain, model, this.shared) : this.admitLocal(tenantId, ws, chain, model);
  }

  private async admitShared(tenantId: string, ws: WorkspaceState, chain: Budget[], model: string, shared: SharedBudgets): Promise<Ticket> {
    const nowMs = this.clock();
    const ends = chain.map((b) => periodOf(b.period, nowMs).end);
    const keys = chain.map((b, i) => `${shared.prefix}budget:{${tenantId}}:${b.teamId}:${ends[i]}`);
    const estimateKey = `${tenantId}\u0000${model}`;
    const estimate = this.estimates.get(estimateKey) ?? 0;
    const args = [estimate, ...chain.map((b) => b.maxCents)];
    try {
      for (let attempt = 0; ; attempt++) {
        const r = (await shared.store.run(ADMIT, keys, args)) as [number, number?, string?];
        const i = Number(r[1] ?? 0) - 1;
        if (Number(r[0]) === 1) break;
        if (Number(r[0]) === 0) throw exceeded(chain[i]!, centsOf(Number(r[2])), ends[i]!, nowMs);
        if (attempt >= 3) throw new Error("budget state keeps disappearing from the store");
        // missing (first use, flushed or expired): seeded from the durable records
        const b = chain[i]!;
        const { start, end } = periodOf(b.period, nowMs);
        const s = this.teams(tenantId);
        const keyIds = await s.keyIdsOf(await s.subtree(b.teamId));
        await this.usage.flush();
        const usd = await this.usage.spendUsd(tenantId, keyIds, iso(start));
        await shared.store.run(SEED, [keys[i]!], [usd, Math.max(1, Math.min(end - nowMs, REBUILD_MS))]);
      }
    } catch (e) {
      if (e instanceof ApiError) throw e;
      if (shared.fail.mode === "closed") throw hotStateUnavailable("the team budget");
      shared.fail.degraded("budget", e);
      return this.admitLocal(tenantId, ws, chain, model);
    }
    let settled = false;
    return {
      settle: (costUsd: number) => {
        if (settled) return;
        settled = true;
        // the cost is in the usage records either way: a settle lost in an outage is re-read at the next rebuild
        shared.store.run(SETTLE, keys, [costUsd, estimate]).catch((e) => shared.fail.degraded("budget_settle", e));
        this.learn(estimateKey, costUsd);
      },
    };
  }

  private learn(estimateKey: string, costUsd: number) {
    if (costUsd > 0) {
      const prev = this.estimates.get(estimateKey);
      this.estimates.set(estimateKey, prev === undefined ? costUsd : prev + ALPHA * (costUsd - prev));
    }
  }

  private admitLocal(tenantId: string, ws: WorkspaceState, chain: Budget[], model: string): Ticket | Promise<Ticket> {
    const nowMs = this.clock();
    let stale: Budget[] | undefined;
    for (const b of chain) if (!((ws.spent.get(b.teamId)?.end ?? 0) > nowMs)) (stale ??= []).push(b);
    if (stale) {
      // a period's spend is read from the stores once (async), then kept current in memory
      return Promise.all(stale.map((b) => this.loadSpent(ws, tenantId, b, nowMs))).then(() => this.admitLocal(tenantId, ws, chain, model));
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
        this.learn(estimateKey, costUsd);
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
    await this.usage.flush();
    const usd = await this.usage.spendUsd(tenantId, keyIds, iso(start));
    // concurrent first requests each load; the first load that lands is kept: requests admitted on it
    // may have settled since (spent += cost), which a later-landing read can miss (their records still queued)
    if (ws.spent.get(b.teamId)?.end !== end) ws.spent.set(b.teamId, { end, usd });
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
