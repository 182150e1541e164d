/**
 * Every SQL statement of the Memory API (rows and dialect texts: store-rows.ts; contributors and
 * sources: store-org.ts; knowledge, documents and search support: store-items.ts, which this class extends), over the tenant-bound async handle (each binds $tenant;
 * FTS tables are reached through their item table's tenant column), one text for SQLite and
 * PostgreSQL; what differs comes from the dialect (sqlOf below) and, for full-text search, from
 * lexical.ts. The services never see SQL.
 */
import { ApiError } from "../core/errors";
import {
  f32Blob,
  type Branch,
  type LogEntry,
  type Milestone,
  type Project,
  type Session,
} from "./types";

import { MemoryItemStore } from "./store-items";
import {
  MILESTONE_COLS,
  TABLE,
  branchOf,
  logOf,
  milestoneOf,
  milestoneText,
  sessionOf,
  type BranchRow,
  type ItemKind,
  type LogRow,
  type MilestoneRow,
  type ProjectRow,
  type SessionRow,
} from "./store-rows";

export { milestoneOf, milestoneText, sessionOf, type DocumentRow, type ItemKind, type KnowledgeRow, type MilestoneRow } from "./store-rows";
export class MemoryStore extends MemoryItemStore {
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
}
