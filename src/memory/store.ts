/**
 * Every SQL statement of the Memory API (rows and dialect texts: store-rows.ts; contributors and
 * sources: store-org.ts, which this class extends), over the tenant-bound async handle (each binds $tenant;
 * FTS tables are reached through their item table's tenant column), one text for SQLite and
 * PostgreSQL; what differs comes from the dialect (sqlOf below) and, for full-text search, from
 * lexical.ts. The services never see SQL.
 */
import { ApiError } from "../core/errors";
import type { AsyncTenantDb } from "../storage/async";
import type { Dialect } from "../storage/dialect";
import type { Lexical } from "./lexical";
import {
  blobF32,
  f32Blob,
  type Branch,
  type DocumentInput,
  type LogEntry,
  type Milestone,
  type Project,
  type Session,
} from "./types";

import { MemoryOrgStore } from "./store-org";
import {
  MILESTONE_COLS,
  TABLE,
  branchOf,
  logOf,
  milestoneOf,
  milestoneText,
  sessionOf,
  sqlFor,
  token,
  type BranchRow,
  type DocumentRow,
  type ItemKind,
  type KnowledgeRow,
  type LogRow,
  type MilestoneRow,
  type ProjectRow,
  type SessionRow,
  type Sql,
} from "./store-rows";

export { milestoneOf, milestoneText, sessionOf, type DocumentRow, type ItemKind, type KnowledgeRow, type MilestoneRow } from "./store-rows";
export class MemoryStore extends MemoryOrgStore {
  private readonly sql: Sql;

  constructor(
    db: AsyncTenantDb,
    private readonly lex: Lexical,
    dialect: Dialect,
  ) {
    super(db);
    this.sql = sqlFor(dialect);
  }

  /** FTS scope tokens: one for the tenant, one for the tenant's project (narrowing only; SQL still filters). */
  tenantToken(): string {
    return token("t_", this.tenantId);
  }
  projectToken(projectId: string): string {
    return token("p_", `${this.tenantId}\u0000${projectId}`);
  }

  /**
   * fn in one transaction (on PostgreSQL it may run again: database work only). Every body in
   * this domain checks before it writes, so a refusal it throws (ApiError: 404, 409, 429) leaves
   * nothing written: the empty transaction is committed and the refusal rethrown after it, not
   * rolled back — on SQLite the async transaction shares the connection with the domains still on
   * the synchronous storage, and a rollback would take along a write of theirs that ran between
   * the body's awaits (docs/notes/postgres-plan.md, "Transition hazard"). Other errors roll back.
   */
  async tx<T>(fn: () => Promise<T>): Promise<T> {
    const out = await this.db.tx(async (): Promise<{ ok: T } | { refused: ApiError }> => {
      try {
        return { ok: await fn() };
      } catch (e) {
        if (e instanceof ApiError) return { refused: e };
        throw e;
      }
    });
    if ("refused" in out) throw out.refused;
    return out.ok;
  }

  // ---------------------------------------------------------------- projects

  private async projectOf(r: ProjectRow): Promise<Project> {
    return {
      projectId: r.project_id,
      tenantId: this.tenantId,
      name: r.name,
      roadmap: r.roadmap,
      milestoneCount: r.milestone_count,
      activeBranches: await this.activeBranches(r.project_id),
      createdAt: r.created_at,
      updatedAt: r.updated_at,
    };
  }

  async activeBranches(projectId: string): Promise<string[]> {
    const rows = await this.db.all<{ branch_name: string }>(
      `SELECT branch_name FROM memory_branches WHERE tenant_id = $tenant AND project_id = $p AND status = 'active' ORDER BY ${this.sql.branchOrder("")}`,
      { p: projectId },
    );
    return rows.map((r) => r.branch_name);
  }

  async project(projectId: string): Promise<Project | undefined> {
    const r = await this.db.get<ProjectRow>(`SELECT * FROM memory_projects WHERE tenant_id = $tenant AND project_id = $p`, { p: projectId });
    return r && this.projectOf(r);
  }

  async projectExists(projectId: string): Promise<boolean> {
    return !!(await this.db.get(`SELECT 1 AS x FROM memory_projects WHERE tenant_id = $tenant AND project_id = $p`, { p: projectId }));
  }

  async projectIds(): Promise<string[]> {
    return (await this.db.all<{ project_id: string }>(`SELECT project_id FROM memory_projects WHERE tenant_id = $tenant ORDER BY project_id`)).map((r) => r.project_id);
  }

  async listProjects(limit: number, offset: number): Promise<{ items: Project[]; total: number }> {
    const rows = await this.db.all<ProjectRow>(`SELECT * FROM memory_projects WHERE tenant_id = $tenant ORDER BY created_at, project_id LIMIT $limit OFFSET $offset`, { limit, offset });
    const total = await this.count(`SELECT COUNT(*) AS n FROM memory_projects WHERE tenant_id = $tenant`);
    const items: Project[] = [];
    for (const r of rows) items.push(await this.projectOf(r));
    return { items, total };
  }

  async insertProject(p: { projectId: string; name: string; roadmap: string; at: string }) {
    await this.db.run(
      `INSERT INTO memory_projects (tenant_id, project_id, name, roadmap, created_at, updated_at) VALUES ($tenant, $p, $name, $roadmap, $at, $at)`,
      { p: p.projectId, name: p.name, roadmap: p.roadmap, at: p.at },
    );
    await this.db.run(
      `INSERT INTO memory_branches (tenant_id, project_id, branch_name, parent_branch, purpose, status, agent_id, created_at, updated_at)
       VALUES ($tenant, $p, 'main', NULL, $purpose, 'active', 'system', $at, $at)`,
      { p: p.projectId, purpose: "main line of the project", at: p.at },
    );
  }

  async updateRoadmap(projectId: string, roadmap: string, at: string) {
    await this.db.run(`UPDATE memory_projects SET roadmap = $roadmap, updated_at = $at WHERE tenant_id = $tenant AND project_id = $p`, { p: projectId, roadmap, at });
  }

  /** Remove a project with every row it holds. */
  async deleteProject(projectId: string) {
    const p = { p: projectId };
    for (const kind of ["milestone", "knowledge", "document"] as ItemKind[]) {
      const t = TABLE[kind];
      await this.db.run(`DELETE FROM ${t}_fts WHERE rowid IN (SELECT key FROM ${t} WHERE tenant_id = $tenant AND project_id = $p)`, p);
      await this.db.run(`DELETE FROM ${t} WHERE tenant_id = $tenant AND project_id = $p`, p);
    }
    for (const t of ["memory_logs", "memory_branches", "memory_sessions", "memory_metadata", "memory_sources", "memory_projects"])
      await this.db.run(`DELETE FROM ${t} WHERE tenant_id = $tenant AND project_id = $p`, p);
  }

  /** Take the next sequence number of a project and count one more milestone. */
  async nextSequence(projectId: string, at: string): Promise<number> {
    return (await this.db.get<{ seq: number }>(
      `UPDATE memory_projects SET next_seq = next_seq + 1, milestone_count = milestone_count + 1, updated_at = $at
       WHERE tenant_id = $tenant AND project_id = $p RETURNING next_seq - 1 AS seq`,
      { p: projectId, at },
    ))!.seq;
  }

  // ---------------------------------------------------------------- branches

  private static BRANCH_SELECT = `SELECT b.*, (SELECT COUNT(*) FROM memory_milestones m WHERE m.tenant_id = b.tenant_id AND m.project_id = b.project_id AND m.branch_name = b.branch_name) AS milestone_count FROM memory_branches b`;

  async branch(projectId: string, name: string): Promise<Branch | undefined> {
    const r = await this.db.get<BranchRow>(`${MemoryStore.BRANCH_SELECT} WHERE b.tenant_id = $tenant AND b.project_id = $p AND b.branch_name = $b`, { p: projectId, b: name });
    return r && branchOf(r);
  }

  async branches(projectId: string): Promise<Branch[]> {
    return (await this.db.all<BranchRow>(`${MemoryStore.BRANCH_SELECT} WHERE b.tenant_id = $tenant AND b.project_id = $p ORDER BY ${this.sql.branchOrder("b.")}`, { p: projectId })).map(branchOf);
  }

  async branchPage(projectId: string, limit: number, offset: number): Promise<{ items: Branch[]; total: number }> {
    const items = (
      await this.db.all<BranchRow>(`${MemoryStore.BRANCH_SELECT} WHERE b.tenant_id = $tenant AND b.project_id = $p ORDER BY ${this.sql.branchOrder("b.")} LIMIT $limit OFFSET $offset`, {
        p: projectId,
        limit,
        offset,
      })
    ).map(branchOf);
    const total = await this.count(`SELECT COUNT(*) AS n FROM memory_branches WHERE tenant_id = $tenant AND project_id = $p`, { p: projectId });
    return { items, total };
  }

  async insertBranch(b: { projectId: string; branchName: string; parentBranch: string; purpose: string; agentId: string; at: string }) {
    await this.db.run(
      `INSERT INTO memory_branches (tenant_id, project_id, branch_name, parent_branch, purpose, status, agent_id, created_at, updated_at)
       VALUES ($tenant, $p, $b, $parent, $purpose, 'active', $agent, $at, $at)`,
      { p: b.projectId, b: b.branchName, parent: b.parentBranch, purpose: b.purpose, agent: b.agentId, at: b.at },
    );
  }

  async abandonBranch(projectId: string, name: string, reason: string, at: string) {
    await this.db.run(
      `UPDATE memory_branches SET status = 'abandoned', abandon_reason = $reason, updated_at = $at WHERE tenant_id = $tenant AND project_id = $p AND branch_name = $b`,
      { p: projectId, b: name, reason, at },
    );
  }

  async markMerged(projectId: string, name: string, into: string, milestoneId: string, at: string) {
    await this.db.run(
      `UPDATE memory_branches SET status = 'merged', merged_into = $into, merge_milestone_id = $mid, updated_at = $at WHERE tenant_id = $tenant AND project_id = $p AND branch_name = $b`,
      { p: projectId, b: name, into, mid: milestoneId, at },
    );
  }

  async nextLogSequence(projectId: string, branch: string): Promise<number> {
    return (await this.db.get<{ seq: number }>(
      `UPDATE memory_branches SET next_log_seq = next_log_seq + 1 WHERE tenant_id = $tenant AND project_id = $p AND branch_name = $b RETURNING next_log_seq - 1 AS seq`,
      { p: projectId, b: branch },
    ))!.seq;
  }

  // ---------------------------------------------------------------- milestones

  async milestoneByHash(projectId: string, hash: bigint): Promise<Milestone | undefined> {
    const r = await this.db.get<MilestoneRow>(`SELECT ${MILESTONE_COLS} FROM memory_milestones WHERE tenant_id = $tenant AND project_id = $p AND content_hash = $h`, { p: projectId, h: hash });
    return r && milestoneOf(r);
  }

  async milestone(projectId: string, milestoneId: string): Promise<Milestone | undefined> {
    const r = await this.db.get<MilestoneRow>(`SELECT ${MILESTONE_COLS} FROM memory_milestones WHERE tenant_id = $tenant AND project_id = $p AND milestone_id = $id`, { p: projectId, id: milestoneId });
    return r && milestoneOf(r);
  }

  async insertMilestone(m: Milestone, embedderId: string, vec: Float32Array): Promise<number> {
    const key = (await this.db.get<{ key: number }>(
      `INSERT INTO memory_milestones (milestone_id, tenant_id, project_id, branch_name, branch_purpose, cumulative_progress, this_contribution, content_hash, sequence_number, agent_id, agent_type, merged_from, embedder_id, vec, created_at)
       VALUES ($id, $tenant, $p, $b, $purpose, $progress, $contribution, $hash, $seq, $agent, $agentType, $mergedFrom, $embedder, $vec, $at) RETURNING key`,
      {
        id: m.milestoneId,
        p: m.projectId,
        b: m.branchName,
        purpose: m.branchPurpose,
        progress: m.cumulativeProgress,
        contribution: m.thisContribution,
        hash: m.contentHash,
        seq: m.sequenceNumber,
        agent: m.agentId,
        agentType: m.agentType,
        mergedFrom: m.mergedFrom,
        embedder: embedderId,
        vec: f32Blob(vec),
        at: m.createdAt,
      },
    ))!.key;
    await this.indexText("milestone", key, milestoneText(m), m.projectId);
    return key;
  }

  async branchMilestones(projectId: string, branch: string, limit: number, offset: number): Promise<{ items: Milestone[]; total: number }> {
    const p = { p: projectId, b: branch };
    const rows = await this.db.all<MilestoneRow>(
      `SELECT ${MILESTONE_COLS} FROM memory_milestones WHERE tenant_id = $tenant AND project_id = $p AND branch_name = $b ORDER BY sequence_number DESC LIMIT $limit OFFSET $offset`,
      { ...p, limit, offset },
    );
    const total = await this.count(`SELECT COUNT(*) AS n FROM memory_milestones WHERE tenant_id = $tenant AND project_id = $p AND branch_name = $b`, p);
    return { items: rows.map(milestoneOf), total };
  }

  countBranchMilestones(projectId: string, branch: string): Promise<number> {
    return this.count(`SELECT COUNT(*) AS n FROM memory_milestones WHERE tenant_id = $tenant AND project_id = $p AND branch_name = $b`, { p: projectId, b: branch });
  }

  async milestonesByKeys(keys: number[]): Promise<Map<number, Milestone>> {
    if (!keys.length) return new Map();
    const rows = await this.db.all<MilestoneRow>(`SELECT ${MILESTONE_COLS} FROM memory_milestones WHERE tenant_id = $tenant AND key IN ${this.sql.keys("$keys")}`, {
      keys: JSON.stringify(keys),
    });
    return new Map(rows.map((r) => [r.key, milestoneOf(r)]));
  }

  async milestonesOfAgents(agentIds: string[], limit: number, offset: number): Promise<{ items: Milestone[]; total: number }> {
    const a = { agents: JSON.stringify(agentIds) };
    const rows = await this.db.all<MilestoneRow>(
      `SELECT ${MILESTONE_COLS} FROM memory_milestones WHERE tenant_id = $tenant AND agent_id IN ${this.sql.ids("$agents")} ORDER BY created_at DESC, key DESC LIMIT $limit OFFSET $offset`,
      { ...a, limit, offset },
    );
    const total = await this.count(`SELECT COUNT(*) AS n FROM memory_milestones WHERE tenant_id = $tenant AND agent_id IN ${this.sql.ids("$agents")}`, a);
    return { items: rows.map(milestoneOf), total };
  }

  // ---------------------------------------------------------------- logs

  async insertLog(e: LogEntry & { content: string }) {
    await this.db.run(
      `INSERT INTO memory_logs (entry_id, tenant_id, project_id, branch_name, agent_id, phase, content, sequence_number, created_at)
       VALUES ($id, $tenant, $p, $b, $agent, $phase, $content, $seq, $at)`,
      { id: e.entryId, p: e.projectId, b: e.branchName, agent: e.agentId, phase: e.phase, content: e.content, seq: e.sequenceNumber, at: e.createdAt },
    );
  }

  async logs(projectId: string, branch: string, limit: number, offset: number): Promise<{ items: LogEntry[]; total: number }> {
    const p = { p: projectId, b: branch };
    const rows = await this.db.all<LogRow>(
      `SELECT * FROM memory_logs WHERE tenant_id = $tenant AND project_id = $p AND branch_name = $b ORDER BY sequence_number DESC LIMIT $limit OFFSET $offset`,
      { ...p, limit, offset },
    );
    const total = await this.count(`SELECT COUNT(*) AS n FROM memory_logs WHERE tenant_id = $tenant AND project_id = $p AND branch_name = $b`, p);
    return { items: rows.map((r) => logOf(r, true)), total };
  }

  // ---------------------------------------------------------------- metadata segments

  agentStats(projectId: string) {
    return this.db.all<{ agentId: string; agentTypes: string; milestones: number; logEntries: number; sessions: number; firstAt: string; lastAt: string }>(this.sql.agentStats, { p: projectId });
  }

  branchStats(projectId: string) {
    return this.db.all<{ branchName: string; status: string; milestones: number; logEntries: number; lastMilestoneAt: string | null }>(
      `SELECT b.branch_name AS "branchName", b.status AS status,
              (SELECT COUNT(*) FROM memory_milestones m WHERE m.tenant_id = $tenant AND m.project_id = $p AND m.branch_name = b.branch_name) AS milestones,
              (SELECT COUNT(*) FROM memory_logs l WHERE l.tenant_id = $tenant AND l.project_id = $p AND l.branch_name = b.branch_name) AS "logEntries",
              (SELECT MAX(created_at) FROM memory_milestones m WHERE m.tenant_id = $tenant AND m.project_id = $p AND m.branch_name = b.branch_name) AS "lastMilestoneAt"
       FROM memory_branches b WHERE b.tenant_id = $tenant AND b.project_id = $p ORDER BY ${this.sql.branchOrder("b.")}`,
      { p: projectId },
    );
  }

  async projectCounts(projectId: string) {
    const n = (table: string) => this.count(`SELECT COUNT(*) AS n FROM ${table} WHERE tenant_id = $tenant AND project_id = $p`, { p: projectId });
    return {
      milestones: await n("memory_milestones"),
      logEntries: await n("memory_logs"),
      branches: await n("memory_branches"),
      sessions: await n("memory_sessions"),
      knowledge: await n("memory_knowledge"),
      documents: await n("memory_documents"),
      sources: await n("memory_sources"),
    };
  }

  async metadata(projectId: string, segment: string): Promise<{ data: unknown; updatedAt: string } | undefined> {
    const r = await this.db.get<{ data: string; updated_at: string }>(`SELECT data, updated_at FROM memory_metadata WHERE tenant_id = $tenant AND project_id = $p AND segment = $s`, {
      p: projectId,
      s: segment,
    });
    return r && { data: JSON.parse(r.data), updatedAt: r.updated_at };
  }

  async metadataSegments(projectId: string): Promise<string[]> {
    return (await this.db.all<{ segment: string }>(`SELECT segment FROM memory_metadata WHERE tenant_id = $tenant AND project_id = $p ORDER BY segment`, { p: projectId })).map((r) => r.segment);
  }

  async putMetadata(projectId: string, segment: string, data: unknown, at: string) {
    await this.db.run(
      `INSERT INTO memory_metadata (tenant_id, project_id, segment, data, updated_at) VALUES ($tenant, $p, $s, $data, $at)
       ON CONFLICT (tenant_id, project_id, segment) DO UPDATE SET data = excluded.data, updated_at = excluded.updated_at`,
      { p: projectId, s: segment, data: JSON.stringify(data), at },
    );
  }

  // ---------------------------------------------------------------- sessions

  /** Insert or update a session; true when it is new. */
  async upsertSession(s: Session): Promise<boolean> {
    const existed = !!(await this.db.get(`SELECT 1 AS x FROM memory_sessions WHERE tenant_id = $tenant AND project_id = $p AND session_id = $s`, { p: s.projectId, s: s.sessionId }));
    await this.db.run(
      `INSERT INTO memory_sessions (tenant_id, project_id, session_id, branch_name, agent_id, agent_type, milestones_recalled, compaction_count, tool_calls_total, tool_calls_read, tool_calls_search, tool_calls_edit, tool_calls_execute, tool_calls_agent, session_duration_secs, started_at, ended_at, created_at)
       VALUES ($tenant, $p, $s, $b, $agent, $agentType, $recalled, $compactions, $total, $read, $search, $edit, $execute, $agentCalls, $duration, $started, $ended, $at)
       ON CONFLICT (tenant_id, project_id, session_id) DO UPDATE SET branch_name = excluded.branch_name, agent_id = excluded.agent_id, agent_type = excluded.agent_type,
         milestones_recalled = excluded.milestones_recalled, compaction_count = excluded.compaction_count, tool_calls_total = excluded.tool_calls_total,
         tool_calls_read = excluded.tool_calls_read, tool_calls_search = excluded.tool_calls_search, tool_calls_edit = excluded.tool_calls_edit,
         tool_calls_execute = excluded.tool_calls_execute, tool_calls_agent = excluded.tool_calls_agent, session_duration_secs = excluded.session_duration_secs,
         started_at = excluded.started_at, ended_at = excluded.ended_at`,
      {
        p: s.projectId,
        s: s.sessionId,
        b: s.branchName,
        agent: s.agentId,
        agentType: s.agentType,
        recalled: s.milestonesRecalled,
        compactions: s.compactionCount,
        total: s.toolCallsTotal,
        read: s.toolCallsRead,
        search: s.toolCallsSearch,
        edit: s.toolCallsEdit,
        execute: s.toolCallsExecute,
        agentCalls: s.toolCallsAgent,
        duration: s.sessionDurationSecs,
        started: s.startedAt,
        ended: s.endedAt,
        at: s.createdAt,
      },
    );
    return !existed;
  }

  async session(projectId: string, sessionId: string): Promise<Session> {
    return sessionOf((await this.db.get<SessionRow>(`SELECT * FROM memory_sessions WHERE tenant_id = $tenant AND project_id = $p AND session_id = $s`, { p: projectId, s: sessionId }))!);
  }

  sessionGroups(projectId: string) {
    const withMemory = `CASE WHEN milestones_recalled > 0 THEN 1 ELSE 0 END`;
    return this.db.all<{ agentType: string; withMemory: number; n: number; compactions: number; contextTools: number; duration: number }>(
      `SELECT agent_type AS "agentType", ${withMemory} AS "withMemory", COUNT(*) AS n, SUM(compaction_count) AS compactions,
              SUM(tool_calls_read + tool_calls_search) AS "contextTools", SUM(session_duration_secs) AS duration
       FROM memory_sessions WHERE tenant_id = $tenant AND project_id = $p GROUP BY agent_type, ${withMemory}`,
      { p: projectId },
    );
  }

  async recentSessions(projectId: string, limit: number): Promise<Session[]> {
    return (await this.db.all<SessionRow>(`SELECT * FROM memory_sessions WHERE tenant_id = $tenant AND project_id = $p ORDER BY ended_at DESC, key DESC LIMIT $limit`, { p: projectId, limit })).map(
      sessionOf,
    );
  }

  // ---------------------------------------------------------------- knowledge

  knowledgeByHash(projectId: string, hash: bigint): Promise<KnowledgeRow | undefined> {
    return this.db.get<KnowledgeRow>(
      `SELECT key, knowledge_id, project_id, cache_key, reuse_score, summary, l2_collection, blob_key, created_at FROM memory_knowledge WHERE tenant_id = $tenant AND project_id = $p AND content_hash = $h`,
      { p: projectId, h: hash },
    );
  }

  /** Creation times of the project's promotions since `since` (oldest first). */
  async promotionsSince(projectId: string, since: string): Promise<string[]> {
    return (
      await this.db.all<{ created_at: string }>(`SELECT created_at FROM memory_knowledge WHERE tenant_id = $tenant AND project_id = $p AND created_at > $since ORDER BY created_at`, { p: projectId, since })
    ).map((r) => r.created_at);
  }

  async insertKnowledge(k: Omit<KnowledgeRow, "key">, hash: bigint, embedderId: string, vec: Float32Array): Promise<number> {
    const key = (await this.db.get<{ key: number }>(
      `INSERT INTO memory_knowledge (knowledge_id, tenant_id, project_id, cache_key, reuse_score, summary, l2_collection, blob_key, content_hash, embedder_id, vec, created_at)
       VALUES ($id, $tenant, $p, $cacheKey, $score, $summary, $l2, $blob, $hash, $embedder, $vec, $at) RETURNING key`,
      {
        id: k.knowledge_id,
        p: k.project_id,
        cacheKey: k.cache_key,
        score: k.reuse_score,
        summary: k.summary,
        l2: k.l2_collection,
        blob: k.blob_key,
        hash,
        embedder: embedderId,
        vec: f32Blob(vec),
        at: k.created_at,
      },
    ))!.key;
    await this.indexText("knowledge", key, k.summary, k.project_id);
    return key;
  }

  async knowledgeByKeys(keys: number[]): Promise<Map<number, KnowledgeRow>> {
    if (!keys.length) return new Map();
    const rows = await this.db.all<KnowledgeRow>(
      `SELECT key, knowledge_id, project_id, cache_key, reuse_score, summary, l2_collection, blob_key, created_at FROM memory_knowledge WHERE tenant_id = $tenant AND key IN ${this.sql.keys("$keys")}`,
      { keys: JSON.stringify(keys) },
    );
    return new Map(rows.map((r) => [r.key, r]));
  }

  // ---------------------------------------------------------------- documents

  /** Insert or replace a synced document; returns its key and whether an older version was replaced. */
  async upsertDocument(
    projectId: string,
    sourceId: string,
    d: DocumentInput,
    documentId: string,
    embedderId: string,
    vec: Float32Array,
    at: string,
  ): Promise<{ key: number; replaced: number | null }> {
    const old = await this.db.get<{ key: number }>(`SELECT key FROM memory_documents WHERE tenant_id = $tenant AND source_id = $s AND external_id = $e`, { s: sourceId, e: d.externalId });
    if (old) {
      await this.db.run(`DELETE FROM memory_documents_fts WHERE rowid IN (SELECT key FROM memory_documents WHERE tenant_id = $tenant AND key = $k)`, { k: old.key });
      await this.db.run(`DELETE FROM memory_documents WHERE tenant_id = $tenant AND key = $k`, { k: old.key });
    }
    const key = (await this.db.get<{ key: number }>(
      `INSERT INTO memory_documents (document_id, tenant_id, project_id, source_id, external_id, kind, title, body, url, author, updated_at, embedder_id, vec, created_at)
       VALUES ($id, $tenant, $p, $s, $e, $kind, $title, $body, $url, $author, $updated, $embedder, $vec, $at) RETURNING key`,
      {
        id: documentId,
        p: projectId,
        s: sourceId,
        e: d.externalId,
        kind: d.kind,
        title: d.title,
        body: d.body,
        url: d.url,
        author: d.author,
        updated: d.updatedAt,
        embedder: embedderId,
        vec: f32Blob(vec),
        at,
      },
    ))!.key;
    await this.indexText("document", key, `${d.title}\n${d.body}`, projectId);
    return { key, replaced: old?.key ?? null };
  }

  async documentsByKeys(keys: number[]): Promise<Map<number, DocumentRow>> {
    if (!keys.length) return new Map();
    const rows = await this.db.all<DocumentRow>(
      `SELECT key, document_id, project_id, source_id, external_id, kind, title, body, url, author, updated_at, created_at FROM memory_documents WHERE tenant_id = $tenant AND key IN ${this.sql.keys("$keys")}`,
      { keys: JSON.stringify(keys) },
    );
    return new Map(rows.map((r) => [r.key, r]));
  }

  documentsOfSource(sourceId: string): Promise<DocumentRow[]> {
    return this.db.all<DocumentRow>(
      `SELECT key, document_id, project_id, source_id, external_id, kind, title, body, url, author, updated_at, created_at FROM memory_documents WHERE tenant_id = $tenant AND source_id = $s ORDER BY key`,
      { s: sourceId },
    );
  }

  /** Remove a source's documents; returns their keys. */
  async deleteDocumentsOfSource(sourceId: string): Promise<Array<{ key: number; project_id: string }>> {
    const rows = await this.db.all<{ key: number; project_id: string }>(`SELECT key, project_id FROM memory_documents WHERE tenant_id = $tenant AND source_id = $s`, { s: sourceId });
    await this.db.run(`DELETE FROM memory_documents_fts WHERE rowid IN (SELECT key FROM memory_documents WHERE tenant_id = $tenant AND source_id = $s)`, { s: sourceId });
    await this.db.run(`DELETE FROM memory_documents WHERE tenant_id = $tenant AND source_id = $s`, { s: sourceId });
    return rows;
  }

  // ---------------------------------------------------------------- search support

  private async indexText(kind: ItemKind, key: number, text: string, projectId: string) {
    const t = TABLE[kind];
    await this.db.run(`INSERT INTO ${t}_fts (rowid, body, scope) SELECT key, CAST($body AS TEXT), CAST($scope AS TEXT) FROM ${t} WHERE tenant_id = $tenant AND key = $key`, {
      key,
      body: this.lex.bodyOf(text),
      scope: `${this.tenantToken()} ${this.projectToken(projectId)}`,
    });
  }

  /** Vectors of a project's items of one kind (to build its index), or only those with a key above `afterKey` (to catch up). */
  async vectors(kind: ItemKind, projectId: string, embedderId: string, afterKey = -1): Promise<Array<{ vecKey: number; vec: Float32Array }>> {
    return (await this.db.all<{ key: number; vec: Uint8Array }>(`SELECT key, vec FROM ${TABLE[kind]} WHERE tenant_id = $tenant AND project_id = $p AND embedder_id = $e AND key > $after`, { p: projectId, e: embedderId, after: afterKey })).map(
      (r) => ({ vecKey: r.key, vec: blobF32(r.vec) }),
    );
  }

  /** What a saved index must match to be loaded: count, max and sum of the keys of the rows it holds. */
  async fingerprint(kind: ItemKind, projectId: string, embedderId: string): Promise<{ count: number; maxKey: number; sumKey: number }> {
    return (await this.db.get<{ count: number; maxKey: number; sumKey: number }>(
      `SELECT COUNT(*) AS count, COALESCE(MAX(key), 0) AS "maxKey", COALESCE(SUM(key), 0) AS "sumKey" FROM ${TABLE[kind]} WHERE tenant_id = $tenant AND project_id = $p AND embedder_id = $e`,
      { p: projectId, e: embedderId },
    ))!;
  }

  /**
   * BM25 matches of any of `words` among the given projects' items of one kind, best first, with
   * optional filters (agent ids, created since); lexical.ts runs it on either backend. The match is
   * narrowed to the project's scope (the tenant's, for several projects; SQL keeps only the listed
   * ones); words in more than `maxDf` items of that scope are dropped, so the cost stays bounded.
   */
  lexical(kind: ItemKind, words: string[], projectIds: string[], k: number, filter: { agentIds?: string[]; since?: string } = {}): Promise<Array<{ key: number; bm25: number }>> {
    const time = kind === "document" ? "updated_at" : "created_at";
    const where: string[] = [];
    const params: Record<string, string> = {};
    if (filter.agentIds && kind === "milestone") {
      where.push(`i.agent_id IN ${this.sql.ids("$agents")}`);
      params.agents = JSON.stringify(filter.agentIds);
    }
    if (filter.since) {
      where.push(`i.${time} >= $since`);
      params.since = filter.since;
    }
    // one project: its token; several: the tenant's (an OR of project tokens makes FTS5 merge their doclists for every word)
    const scope = { tenantToken: this.tenantToken(), projectToken: projectIds.length === 1 ? this.projectToken(projectIds[0]!) : undefined, projectIds };
    return this.lex.search(this.db, { table: TABLE[kind], words, scope, k, where, params });
  }

  /** Keys (of the given set) that pass the filters. */
  async filterKeys(kind: ItemKind, keys: number[], filter: { agentIds?: string[]; since?: string }): Promise<Set<number>> {
    if (!keys.length) return new Set();
    const t = TABLE[kind];
    const time = kind === "document" ? "updated_at" : "created_at";
    const where = [`tenant_id = $tenant`, `key IN ${this.sql.keys("$keys")}`];
    const params: Record<string, string> = { keys: JSON.stringify(keys) };
    if (filter.agentIds && kind === "milestone") {
      where.push(`agent_id IN ${this.sql.ids("$agents")}`);
      params.agents = JSON.stringify(filter.agentIds);
    }
    if (filter.since) {
      where.push(`${time} >= $since`);
      params.since = filter.since;
    }
    return new Set((await this.db.all<{ key: number }>(`SELECT key FROM ${t} WHERE ${where.join(" AND ")}`, params)).map((r) => r.key));
  }

}
