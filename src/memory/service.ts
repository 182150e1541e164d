/**
 * The Memory API's core rules (doc1 §4.12): projects, milestones (content-hash deduplication,
 * gap-free sequence numbers), reasoning logs, branches (abandon, atomic merge), recall views and
 * metadata segments, search, session metrics and promotion to knowledge (contributors:
 * contributors.ts).
 * Every method takes the caller's tenant; stores are tenant-bound.
 */
import { ApiError, badRequest, conflict, invalidRequest, notFound } from "../core/errors";
import { uuid } from "../core/ids";
import { l2normalize } from "../core/vectors";
import { KeyedSerial } from "../core/serial";
import { StorageConstraintError } from "../storage/errors";
import type { MemoryConfig } from "./config";
import { contentHash } from "./hash";
import type { Embedder } from "./ports";
import type { Retriever } from "./search";
import type { MemoryStore } from "./store";
import type { MemoryVectors } from "./vectors";
import type { Branch, LogEntry, Milestone, Phase, Project, Session } from "./types";

/** Derived metadata segments (read-only); any other name is a custom segment written with PUT. */
export const DERIVED_SEGMENTS = ["agents", "branches", "stats", "sessions"] as const;
export const RECENT_SESSIONS = 20;

import type { StoreInput, RecallQuery, SessionInput, PromoteInput } from "./service-inputs";

export type { StoreInput, RecallQuery, SessionInput, PromoteInput } from "./service-inputs";

const round2 = (x: number) => Math.round(x * 100) / 100;
const avg = (sum: number, n: number) => (n > 0 ? round2(sum / n) : 0);
/** (without - with) / without as a percentage; 0 when there is nothing to compare against */
const reduction = (without: number, withMem: number) => (without > 0 ? round2(((without - withMem) / without) * 100) : 0);

export class MemoryService {
  constructor(
    private readonly stores: (tenantId: string) => MemoryStore,
    private readonly embedder: Embedder,
    private readonly vectors: MemoryVectors,
    private readonly retriever: Retriever,
    private readonly config: Pick<MemoryConfig, "promotions_per_minute">,
    private readonly clock: () => number = Date.now,
  ) {}

  /** a project's numbered writes (milestones, log entries, merges) one at a time in this replica: see core/serial.ts */
  private readonly numbering = new KeyedSerial();
  private numbered<T>(tenantId: string, projectId: string, fn: () => Promise<T>): Promise<T> {
    return this.numbering.run(`${tenantId}\u0000${projectId}`, fn);
  }

  private at() {
    return new Date(this.clock()).toISOString();
  }

  store(tenantId: string): MemoryStore {
    return this.stores(tenantId);
  }

  // ---------------------------------------------------------------- projects

  async createProject(tenantId: string, body: { projectId: string; name: string; roadmap: string }): Promise<Project> {
    const s = this.stores(tenantId);
    const at = this.at();
    // the primary key decides "already exists": a read before the insert would make concurrent
    // creates of different projects conflict on PostgreSQL's predicate locks (SERIALIZABLE)
    try {
      await s.tx(() => s.insertProject({ ...body, at }));
    } catch (e) {
      if (e instanceof StorageConstraintError && e.kind === "unique") throw conflict(`project '${body.projectId}' already exists`);
      throw e;
    }
    return (await s.project(body.projectId))!;
  }

  listProjects(tenantId: string, limit: number, offset: number) {
    return this.stores(tenantId).listProjects(limit, offset);
  }

  async getProject(tenantId: string, projectId: string): Promise<Project> {
    const p = await this.stores(tenantId).project(projectId);
    if (!p) throw notFound(`project '${projectId}'`);
    return p;
  }

  /** Delete a project with everything it holds, in one transaction; then drop its vector indexes. */
  async deleteProject(tenantId: string, projectId: string) {
    const s = this.stores(tenantId);
    await s.tx(async () => {
      if (!(await s.projectExists(projectId))) throw notFound(`project '${projectId}'`);
      await s.deleteProject(projectId);
    });
    this.vectors.dropProject(tenantId, projectId);
  }

  async updateRoadmap(tenantId: string, projectId: string, roadmap: string): Promise<Project> {
    const s = this.stores(tenantId);
    await this.getProject(tenantId, projectId);
    await s.updateRoadmap(projectId, roadmap, this.at());
    return (await s.project(projectId))!;
  }

  // ---------------------------------------------------------------- milestones

  private async writableBranch(s: MemoryStore, projectId: string, branchName: string): Promise<Branch> {
    const b = await s.branch(projectId, branchName);
    if (!b) throw notFound(`branch '${branchName}'`);
    if (b.status !== "active") throw conflict(`branch '${branchName}' is ${b.status}: no new milestones may be added`);
    return b;
  }

  /**
   * Store a milestone. Identical content (same content hash) in the same project returns the
   * existing milestone with `deduplicated: true` and changes nothing.
   */
  async storeMilestone(tenantId: string, projectId: string, body: StoreInput): Promise<{ milestone: Milestone; deduplicated: boolean }> {
    const s = this.stores(tenantId);
    const branchName = body.branchName ?? "main";
    const hash = contentHash(body.branchPurpose, body.cumulativeProgress, body.thisContribution);
    const check = async () => {
      if (!(await s.projectExists(projectId))) throw notFound(`project '${projectId}'`);
      // an unknown branch is a 404 even when the content exists elsewhere: a misspelt branch name must not pass as a stored milestone
      if (!(await s.branch(projectId, branchName))) throw notFound(`branch '${branchName}'`);
      const dup = await s.milestoneByHash(projectId, hash);
      if (dup) return dup;
      await this.writableBranch(s, projectId, branchName);
      return undefined;
    };
    const early = await check();
    if (early) return { milestone: early, deduplicated: true };
    const [vec] = await this.embedder.embed([milestoneEmbedText(body)]);
    // the embedding awaited: decide again, then number and insert in one transaction
    const result = await this.numbered(tenantId, projectId, () => s.tx(async () => {
      const dup = await check();
      if (dup) return { milestone: dup, deduplicated: true, key: -1 };
      const at = this.at();
      const m: Milestone = {
        milestoneId: uuid(),
        projectId,
        branchName,
        branchPurpose: body.branchPurpose,
        cumulativeProgress: body.cumulativeProgress,
        thisContribution: body.thisContribution,
        contentHash: hash,
        contentHashHex: "",
        sequenceNumber: await s.nextSequence(projectId, at),
        agentId: body.agentId,
        agentType: body.agentType ?? "custom",
        mergedFrom: null,
        createdAt: at,
      };
      const key = await s.insertMilestone(m, this.embedder.id, vec!);
      return { milestone: (await s.milestone(projectId, m.milestoneId))!, deduplicated: false, key };
    }));
    if (!result.deduplicated) this.vectors.add(tenantId, projectId, "milestone", result.key, vec!);
    return { milestone: result.milestone, deduplicated: result.deduplicated };
  }

  // ---------------------------------------------------------------- logs

  async appendLog(tenantId: string, projectId: string, body: { branchName?: string; agentId: string; phase: Phase; content: string }): Promise<LogEntry> {
    const s = this.stores(tenantId);
    const branchName = body.branchName ?? "main";
    return this.numbered(tenantId, projectId, () => s.tx(async () => {
      await this.getProject(tenantId, projectId);
      const b = await s.branch(projectId, branchName);
      if (!b) throw notFound(`branch '${branchName}'`);
      if (b.status !== "active") throw conflict(`branch '${branchName}' is ${b.status}: no new log entries may be added`);
      const e = {
        entryId: uuid(),
        projectId,
        branchName,
        agentId: body.agentId,
        phase: body.phase,
        sequenceNumber: await s.nextLogSequence(projectId, branchName),
        createdAt: this.at(),
        content: body.content,
      };
      await s.insertLog(e);
      const { content: _c, ...entry } = e;
      return entry;
    }));
  }

  // ---------------------------------------------------------------- branches

  async createBranch(tenantId: string, projectId: string, body: { branchName: string; parentBranch?: string; purpose: string; agentId: string }): Promise<Branch> {
    const s = this.stores(tenantId);
    const parent = body.parentBranch ?? "main";
    await s.tx(async () => {
      await this.getProject(tenantId, projectId);
      if (await s.branch(projectId, body.branchName)) throw conflict(`branch '${body.branchName}' already exists`);
      const p = await s.branch(projectId, parent);
      if (!p) throw notFound(`parent branch '${parent}'`);
      if (p.status !== "active") throw conflict(`parent branch '${parent}' is ${p.status}`);
      await s.insertBranch({ projectId, branchName: body.branchName, parentBranch: parent, purpose: body.purpose, agentId: body.agentId, at: this.at() });
    });
    return (await s.branch(projectId, body.branchName))!;
  }

  /** doc1 §2.1: memory lists take `limit`/`offset`; oldest first (main first). */
  async listBranches(tenantId: string, projectId: string, limit = 50, offset = 0): Promise<{ items: Branch[]; total: number }> {
    await this.getProject(tenantId, projectId);
    return this.stores(tenantId).branchPage(projectId, limit, offset);
  }

  async getBranch(tenantId: string, projectId: string, name: string): Promise<Branch> {
    await this.getProject(tenantId, projectId);
    const b = await this.stores(tenantId).branch(projectId, name);
    if (!b) throw notFound(`branch '${name}'`);
    return b;
  }

  async abandonBranch(tenantId: string, projectId: string, name: string, reason: string): Promise<Branch> {
    const s = this.stores(tenantId);
    await s.tx(async () => {
      const b = await this.getBranch(tenantId, projectId, name);
      if (name === "main") throw invalidRequest("branch 'main' cannot be abandoned");
      if (b.status !== "active") throw conflict(`branch '${name}' is ${b.status}; only an active branch can be abandoned`);
      await s.abandonBranch(projectId, name, reason, this.at());
    });
    return (await s.branch(projectId, name))!;
  }

  /**
   * Merge `sourceBranch` into `targetBranch` (atomic): a merge milestone with the summary on the
   * target, the source `merged`. Its milestones keep their branch (their history); the branch
   * record links to the target and the merge milestone.
   */
  async merge(tenantId: string, projectId: string, body: { sourceBranch: string; targetBranch?: string; mergeSummary: string; agentId: string }) {
    const s = this.stores(tenantId);
    const target = body.targetBranch ?? "main";
    if (body.sourceBranch === target) throw badRequest(`body field 'targetBranch': a branch cannot be merged into itself ('${target}')`);
    const check = async () => {
      await this.getProject(tenantId, projectId);
      const src = await s.branch(projectId, body.sourceBranch);
      if (!src) throw notFound(`source branch '${body.sourceBranch}'`);
      const tgt = await s.branch(projectId, target);
      if (!tgt) throw notFound(`target branch '${target}'`);
      if (src.status !== "active") throw conflict(`source branch '${body.sourceBranch}' is ${src.status}; only an active branch can be merged`);
      if (tgt.status !== "active") throw conflict(`target branch '${target}' is ${tgt.status}`);
      return tgt;
    };
    const tgt = await check();
    const contribution = `Merged branch '${body.sourceBranch}' into '${target}'.`;
    const input = { branchPurpose: tgt.purpose, cumulativeProgress: body.mergeSummary, thisContribution: contribution };
    const [vec] = await this.embedder.embed([milestoneEmbedText(input)]);
    const out = await this.numbered(tenantId, projectId, () => s.tx(async () => {
      const t2 = await check();
      const at = this.at();
      const merged = await s.countBranchMilestones(projectId, body.sourceBranch);
      const m: Milestone = {
        milestoneId: uuid(),
        projectId,
        branchName: target,
        branchPurpose: t2.purpose,
        cumulativeProgress: body.mergeSummary,
        thisContribution: contribution,
        contentHash: contentHash(t2.purpose, body.mergeSummary, contribution),
        contentHashHex: "",
        sequenceNumber: 0,
        agentId: body.agentId,
        agentType: "merge",
        mergedFrom: body.sourceBranch,
        createdAt: at,
      };
      // the same summary merged before into this target: distinct merges stay distinct milestones
      if (await s.milestoneByHash(projectId, m.contentHash)) m.contentHash = contentHash(t2.purpose, body.mergeSummary, `${contribution} (${m.milestoneId})`);
      m.sequenceNumber = await s.nextSequence(projectId, at);
      const key = await s.insertMilestone(m, this.embedder.id, vec!);
      await s.markMerged(projectId, body.sourceBranch, target, m.milestoneId, at);
      return { key, milestoneId: m.milestoneId, merged };
    }));
    this.vectors.add(tenantId, projectId, "milestone", out.key, vec!);
    return { merged: true, milestonesMerged: out.merged, mergeMilestoneId: out.milestoneId, sourceBranchStatus: "merged" as const, sourceBranch: body.sourceBranch, targetBranch: target };
  }

  // ---------------------------------------------------------------- recall

  async recall(tenantId: string, projectId: string, q: RecallQuery) {
    const s = this.stores(tenantId);
    const project = await this.getProject(tenantId, projectId);
    const view = q.view ?? "overview";
    const branch = q.branch ?? "main";
    const offset = q.offset ?? 0;
    switch (view) {
      case "overview":
        return { view, project, branches: await s.branches(projectId) };
      case "branch": {
        await this.getBranch(tenantId, projectId, branch);
        const limit = q.limit ?? 10;
        const { items, total } = await s.branchMilestones(projectId, branch, limit, offset);
        return { view, branch, milestones: items, total, limit, offset };
      }
      case "milestone": {
        if (!q.milestoneId) throw badRequest("query field 'milestoneId': required for view 'milestone'");
        const m = await s.milestone(projectId, q.milestoneId);
        if (!m) throw notFound(`milestone '${q.milestoneId}'`);
        return { view, milestones: [m] };
      }
      case "log": {
        await this.getBranch(tenantId, projectId, branch);
        const limit = q.limit ?? 20;
        const { items, total } = await s.logs(projectId, branch, limit, offset);
        return { view, branch, logEntries: items, total, limit, offset };
      }
      case "metadata": {
        if (!q.segment) throw badRequest("query field 'segment': required for view 'metadata'");
        return { view, metadata: await this.segment(s, projectId, q.segment) };
      }
    }
  }

  private async segment(s: MemoryStore, projectId: string, name: string) {
    const derived = (data: unknown) => ({ segment: name, kind: "derived", data, updatedAt: this.at() });
    switch (name) {
      case "agents":
        return derived((await s.agentStats(projectId)).map((a) => ({ ...a, agentTypes: JSON.parse(a.agentTypes) })));
      case "branches":
        return derived(await s.branchStats(projectId));
      case "stats":
        return derived({ ...(await s.projectCounts(projectId)), customSegments: await s.metadataSegments(projectId) });
      case "sessions":
        return derived(await this.summaryOf(s, projectId));
    }
    const custom = await s.metadata(projectId, name);
    if (!custom) throw notFound(`metadata segment '${name}'`);
    return { segment: name, kind: "custom", data: custom.data, updatedAt: custom.updatedAt };
  }

  /** Write a custom metadata segment (derived names are read-only). */
  async putSegment(tenantId: string, projectId: string, name: string, data: Record<string, unknown>) {
    const s = this.stores(tenantId);
    await this.getProject(tenantId, projectId);
    if ((DERIVED_SEGMENTS as readonly string[]).includes(name)) throw invalidRequest(`metadata segment '${name}' is derived and read-only`);
    await s.putMetadata(projectId, name, data, this.at());
    return { segment: name, kind: "custom", data, updatedAt: (await s.metadata(projectId, name))!.updatedAt };
  }

  // ---------------------------------------------------------------- search

  async search(tenantId: string, body: { query: string; limit?: number; projectIds?: string[] }, projectId?: string) {
    const s = this.stores(tenantId);
    let projects: string[];
    if (projectId !== undefined) {
      await this.getProject(tenantId, projectId);
      projects = [projectId];
    } else projects = await this.resolveProjects(tenantId, body.projectIds);
    const limit = body.limit ?? (projectId !== undefined ? 20 : 50);
    const vec = await this.retriever.embedQuery(body.query);
    const hits = await this.retriever.rank(s, "milestone", body.query, vec, projects, limit);
    const rows = await s.milestonesByKeys(hits.map((h) => h.key));
    const milestones = hits.flatMap((h) => {
      const m = rows.get(h.key);
      return m ? [{ ...m, score: h.score, similarity: h.similarity, lexicalRank: h.lexicalRank }] : [];
    });
    return { milestones, query: body.query, count: milestones.length };
  }

  /** The listed projects (each must exist: 404 otherwise), or every project of the tenant. */
  async resolveProjects(tenantId: string, ids?: string[]): Promise<string[]> {
    const s = this.stores(tenantId);
    if (ids === undefined) return s.projectIds();
    const unique = [...new Set(ids)];
    for (const id of unique) if (!(await s.projectExists(id))) throw notFound(`project '${id}'`);
    return unique;
  }

  // ---------------------------------------------------------------- session metrics

  async recordSession(tenantId: string, projectId: string, b: SessionInput): Promise<{ session: Session; created: boolean }> {
    const s = this.stores(tenantId);
    if (Date.parse(b.endedAt) < Date.parse(b.startedAt)) throw badRequest("body field 'endedAt': must not be before startedAt");
    const session: Session = {
      sessionId: b.sessionId,
      projectId,
      branchName: b.branchName ?? "main",
      agentId: b.agentId,
      agentType: b.agentType ?? "",
      milestonesRecalled: b.milestonesRecalled,
      compactionCount: b.compactionCount ?? 0,
      toolCallsTotal: b.toolCallsTotal,
      toolCallsRead: b.toolCallsRead ?? 0,
      toolCallsSearch: b.toolCallsSearch ?? 0,
      toolCallsEdit: b.toolCallsEdit ?? 0,
      toolCallsExecute: b.toolCallsExecute ?? 0,
      toolCallsAgent: b.toolCallsAgent ?? 0,
      sessionDurationSecs: b.sessionDurationSecs,
      startedAt: new Date(b.startedAt).toISOString(),
      endedAt: new Date(b.endedAt).toISOString(),
      createdAt: this.at(),
    };
    const parts = session.toolCallsRead + session.toolCallsSearch + session.toolCallsEdit + session.toolCallsExecute + session.toolCallsAgent;
    if (parts > session.toolCallsTotal) throw badRequest("body field 'toolCallsTotal': less than the sum of the per-kind tool calls");
    const created = await s.tx(async () => {
      await this.getProject(tenantId, projectId);
      if (!(await s.branch(projectId, session.branchName))) throw notFound(`branch '${session.branchName}'`);
      return s.upsertSession(session);
    });
    return { session: await s.session(projectId, b.sessionId), created };
  }

  async metricsSummary(tenantId: string, projectId: string) {
    await this.getProject(tenantId, projectId);
    return this.summaryOf(this.stores(tenantId), projectId);
  }

  private async summaryOf(s: MemoryStore, projectId: string) {
    const groups = await s.sessionGroups(projectId);
    const tally = (rows: typeof groups) => {
      const w = { n: 0, compactions: 0, tools: 0, duration: 0 };
      const wo = { n: 0, compactions: 0, tools: 0, duration: 0 };
      for (const r of rows) {
        const t = r.withMemory ? w : wo;
        t.n += r.n;
        t.compactions += r.compactions;
        t.tools += r.contextTools;
        t.duration += r.duration;
      }
      return { w, wo };
    };
    const { w, wo } = tally(groups);
    const total = w.n + wo.n;
    const byType = new Map<string, typeof groups>();
    for (const g of groups) byType.set(g.agentType, [...(byType.get(g.agentType) ?? []), g]);
    return {
      totalSessions: total,
      sessionsWithMemory: w.n,
      sessionsWithoutMemory: wo.n,
      avgCompactionsWithMemory: avg(w.compactions, w.n),
      avgCompactionsWithoutMemory: avg(wo.compactions, wo.n),
      compactionReductionPct: w.n && wo.n ? reduction(wo.compactions / wo.n, w.compactions / w.n) : 0,
      avgContextToolsWithMemory: avg(w.tools, w.n),
      avgContextToolsWithoutMemory: avg(wo.tools, wo.n),
      contextToolReductionPct: w.n && wo.n ? reduction(wo.tools / wo.n, w.tools / w.n) : 0,
      avgDurationWithMemorySecs: avg(w.duration, w.n),
      avgDurationWithoutMemorySecs: avg(wo.duration, wo.n),
      contextRecoveryRate: total ? Math.round((w.n / total) * 10_000) / 10_000 : 0,
      sessionsByAgentType: [...byType.entries()]
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([agentType, rows]) => {
          const t = tally(rows);
          return {
            agentType,
            sessionCount: t.w.n + t.wo.n,
            avgCompactionReductionPct: t.w.n && t.wo.n ? reduction(t.wo.compactions / t.wo.n, t.w.compactions / t.w.n) : 0,
            avgContextToolReductionPct: t.w.n && t.wo.n ? reduction(t.wo.tools / t.wo.n, t.w.tools / t.w.n) : 0,
          };
        }),
      recentSessions: await s.recentSessions(projectId, RECENT_SESSIONS),
    };
  }

  // ---------------------------------------------------------------- promotion

  async promote(tenantId: string, projectId: string, b: PromoteInput): Promise<{ promoted: boolean; knowledgeId: string; reuseScore: number; deduplicated: boolean }> {
    const s = this.stores(tenantId);
    await this.getProject(tenantId, projectId);
    if (b.summaryEmbedding && b.summaryEmbedding.length !== this.embedder.dimensions)
      throw badRequest(`body field 'summaryEmbedding': expected ${this.embedder.dimensions} dimensions (the gateway's embedder ${this.embedder.id}), got ${b.summaryEmbedding.length}`);
    if (b.summaryEmbedding) {
      // a vector that float32 cannot hold (±Infinity after conversion) or with no direction (all zeros) has no cosine: it would index NaN
      const f32 = Float32Array.from(b.summaryEmbedding);
      if (!f32.every(Number.isFinite)) throw badRequest("body field 'summaryEmbedding': every number must be finite within float32 range (|x| < 3.4e38)");
      if (!f32.some((x) => x !== 0)) throw badRequest("body field 'summaryEmbedding': must not be the zero vector");
    }
    const hash = contentHash(b.summary);
    const dup = await s.knowledgeByHash(projectId, hash);
    if (dup) return { promoted: true, knowledgeId: dup.knowledge_id, reuseScore: dup.reuse_score, deduplicated: true };
    await this.checkPromotionRate(s, projectId);
    const vec = b.summaryEmbedding ? l2normalize(Float32Array.from(b.summaryEmbedding)) : (await this.embedder.embed([b.summary]))[0]!;
    const out = await s.tx(async () => {
      await this.getProject(tenantId, projectId);
      const again = await s.knowledgeByHash(projectId, hash);
      if (again) return { id: again.knowledge_id, score: again.reuse_score, key: -1 };
      await this.checkPromotionRate(s, projectId);
      const id = uuid();
      const key = await s.insertKnowledge(
        { knowledge_id: id, project_id: projectId, cache_key: b.cacheKey, reuse_score: b.reuseScore, summary: b.summary, l2_collection: b.l2Collection, blob_key: b.blobKey ?? null, created_at: this.at() },
        hash,
        this.embedder.id,
        vec,
      );
      return { id, score: b.reuseScore, key };
    });
    if (out.key >= 0) this.vectors.add(tenantId, projectId, "knowledge", out.key, vec);
    return { promoted: true, knowledgeId: out.id, reuseScore: out.score, deduplicated: out.key < 0 };
  }

  /** At most `promotions_per_minute` new knowledge records per project in any 60 s window. */
  private async checkPromotionRate(s: MemoryStore, projectId: string) {
    const nowMs = this.clock();
    const recent = await s.promotionsSince(projectId, new Date(nowMs - 60_000).toISOString());
    const max = this.config.promotions_per_minute;
    if (recent.length >= max) {
      const oldest = Date.parse(recent[recent.length - max]!);
      const retry = Math.max(1, Math.ceil((oldest + 60_000 - nowMs) / 1000));
      throw new ApiError("rate_limit_error", `at most ${max} promotions per project per minute`, { retry_after_secs: retry }, { "retry-after": String(retry) });
    }
  }
}

/** The text a milestone is embedded from: what it contributed first, then the state and purpose. */
export const milestoneEmbedText = (m: { branchPurpose: string; cumulativeProgress: string; thisContribution: string }) =>
  `${m.thisContribution}\n${m.cumulativeProgress}\n${m.branchPurpose}`.slice(0, 4_000);
