/**
 * The Memory store's rows and SQL texts (store.ts): row shapes, their mapping to the API's types,
 * and the statements that differ by dialect (built once per dialect).
 */
import { createHash } from "node:crypto";
import type { Dialect } from "../storage/dialect";
import { hashHex } from "./hash";
import type { Branch, BranchStatus, LogEntry, Milestone, Phase, Session, SourceType } from "./types";

export type ItemKind = "milestone" | "knowledge" | "document";

export interface ProjectRow {
  project_id: string;
  name: string;
  roadmap: string;
  milestone_count: number;
  next_seq: number;
  created_at: string;
  updated_at: string;
}

export interface BranchRow {
  project_id: string;
  branch_name: string;
  parent_branch: string | null;
  purpose: string;
  status: BranchStatus;
  agent_id: string;
  abandon_reason: string | null;
  merged_into: string | null;
  merge_milestone_id: string | null;
  next_log_seq: number;
  created_at: string;
  updated_at: string;
  milestone_count?: number;
}

export interface MilestoneRow {
  key: number;
  milestone_id: string;
  project_id: string;
  branch_name: string;
  branch_purpose: string;
  cumulative_progress: string;
  this_contribution: string;
  /** decimal text (read with CAST: a JS number would round it) */
  content_hash: string;
  sequence_number: number;
  agent_id: string;
  agent_type: string;
  merged_from: string | null;
  created_at: string;
}

export const MILESTONE_COLS = `key, milestone_id, project_id, branch_name, branch_purpose, cumulative_progress, this_contribution, CAST(content_hash AS TEXT) AS content_hash, sequence_number, agent_id, agent_type, merged_from, created_at`;

export const milestoneOf = (r: MilestoneRow): Milestone => {
  const h = BigInt(r.content_hash);
  return {
    milestoneId: r.milestone_id,
    projectId: r.project_id,
    branchName: r.branch_name,
    branchPurpose: r.branch_purpose,
    cumulativeProgress: r.cumulative_progress,
    thisContribution: r.this_contribution,
    contentHash: h,
    contentHashHex: hashHex(h),
    sequenceNumber: r.sequence_number,
    agentId: r.agent_id,
    agentType: r.agent_type,
    mergedFrom: r.merged_from,
    createdAt: r.created_at,
  };
};

export const branchOf = (r: BranchRow): Branch => ({
  projectId: r.project_id,
  branchName: r.branch_name,
  parentBranch: r.parent_branch,
  purpose: r.purpose,
  status: r.status,
  agentId: r.agent_id,
  createdAt: r.created_at,
  abandonReason: r.abandon_reason,
  mergedInto: r.merged_into,
  mergeMilestoneId: r.merge_milestone_id,
  milestoneCount: r.milestone_count ?? 0,
  updatedAt: r.updated_at,
});

export interface LogRow {
  entry_id: string;
  project_id: string;
  branch_name: string;
  agent_id: string;
  phase: Phase;
  content: string;
  sequence_number: number;
  created_at: string;
}

export const logOf = (r: LogRow, withContent: boolean): LogEntry => ({
  entryId: r.entry_id,
  projectId: r.project_id,
  branchName: r.branch_name,
  agentId: r.agent_id,
  phase: r.phase,
  sequenceNumber: r.sequence_number,
  createdAt: r.created_at,
  ...(withContent ? { content: r.content } : {}),
});

export interface SessionRow {
  session_id: string;
  project_id: string;
  branch_name: string;
  agent_id: string;
  agent_type: string;
  milestones_recalled: number;
  compaction_count: number;
  tool_calls_total: number;
  tool_calls_read: number;
  tool_calls_search: number;
  tool_calls_edit: number;
  tool_calls_execute: number;
  tool_calls_agent: number;
  session_duration_secs: number;
  started_at: string;
  ended_at: string;
  created_at: string;
}

export const sessionOf = (r: SessionRow): Session => ({
  sessionId: r.session_id,
  projectId: r.project_id,
  branchName: r.branch_name,
  agentId: r.agent_id,
  agentType: r.agent_type,
  milestonesRecalled: r.milestones_recalled,
  compactionCount: r.compaction_count,
  toolCallsTotal: r.tool_calls_total,
  toolCallsRead: r.tool_calls_read,
  toolCallsSearch: r.tool_calls_search,
  toolCallsEdit: r.tool_calls_edit,
  toolCallsExecute: r.tool_calls_execute,
  toolCallsAgent: r.tool_calls_agent,
  sessionDurationSecs: r.session_duration_secs,
  startedAt: r.started_at,
  endedAt: r.ended_at,
  createdAt: r.created_at,
});

export interface ContributorRow {
  contributor_id: string;
  display_name: string;
  agent_ids: string;
  role: string | null;
  created_at: string;
  updated_at: string;
}

export interface SourceRow {
  source_id: string;
  project_id: string;
  source_type: SourceType;
  config: string;
  sync_cursor: string;
  last_synced_at: string | null;
  enabled: number;
  last_error: string | null;
  items_synced: number;
  created_at: string;
  updated_at: string;
}

export interface KnowledgeRow {
  key: number;
  knowledge_id: string;
  project_id: string;
  cache_key: string;
  reuse_score: number;
  summary: string;
  l2_collection: string;
  blob_key: string | null;
  created_at: string;
}

export interface DocumentRow {
  key: number;
  document_id: string;
  project_id: string;
  source_id: string;
  external_id: string;
  kind: string;
  title: string;
  body: string;
  url: string | null;
  author: string | null;
  updated_at: string;
  created_at: string;
}

/** One searchable item's text for the FTS index. */
export const milestoneText = (m: { branchPurpose: string; cumulativeProgress: string; thisContribution: string }) =>
  `${m.thisContribution}\n${m.cumulativeProgress}\n${m.branchPurpose}`;

export const TABLE: Record<ItemKind, string> = { milestone: "memory_milestones", knowledge: "memory_knowledge", document: "memory_documents" };

export const token = (prefix: string, s: string) => prefix + createHash("sha256").update(s).digest("hex").slice(0, 16);

/** SQL texts that differ by dialect, built once per dialect (dialect.ts). */
export function sqlOf(d: Dialect) {
  const ids = (param: string) => d.inJsonArray(param);
  /** item keys bound as a JSON array of numbers */
  const keys = (param: string) => `(SELECT CAST(value AS BIGINT) FROM ${d.jsonEach(param)})`;
  return {
    ids,
    keys,
    /**
     * Branches in creation order; a project's `main` first among those created in the same
     * millisecond (it is created with the project), then by name (no rowid on PostgreSQL).
     */
    branchOrder: (b: string) => `${b}created_at, CASE WHEN ${b}branch_name = 'main' THEN 0 ELSE 1 END, ${b}branch_name`,
    agentStats: `WITH acts AS (
         SELECT agent_id, agent_type, 1 AS ms, 0 AS lg, 0 AS ss, created_at FROM memory_milestones WHERE tenant_id = $tenant AND project_id = $p
         UNION ALL SELECT agent_id, NULL, 0, 1, 0, created_at FROM memory_logs WHERE tenant_id = $tenant AND project_id = $p
         UNION ALL SELECT agent_id, agent_type, 0, 0, 1, ended_at FROM memory_sessions WHERE tenant_id = $tenant AND project_id = $p)
       SELECT a.agent_id AS "agentId",
              COALESCE((SELECT ${d.jsonArrayAgg("DISTINCT t.agent_type")} FROM acts t WHERE t.agent_id = a.agent_id AND t.agent_type IS NOT NULL AND t.agent_type != ''), '[]') AS "agentTypes",
              SUM(a.ms) AS milestones, SUM(a.lg) AS "logEntries", SUM(a.ss) AS sessions, MIN(a.created_at) AS "firstAt", MAX(a.created_at) AS "lastAt"
       FROM acts a GROUP BY a.agent_id ORDER BY a.agent_id`,
  };
}
export type Sql = ReturnType<typeof sqlOf>;
const SQL_BY_DIALECT = new Map<Dialect, Sql>();
export const sqlFor = (d: Dialect): Sql => {
  let s = SQL_BY_DIALECT.get(d);
  if (!s) SQL_BY_DIALECT.set(d, (s = sqlOf(d)));
  return s;
};

