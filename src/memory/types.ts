/** The Memory API's records as the API shows them (doc1 §2.2) and a few shared helpers. */

export const BRANCH_STATUSES = ["active", "abandoned", "merged"] as const;
export type BranchStatus = (typeof BRANCH_STATUSES)[number];
export const PHASES = ["observation", "thought", "action"] as const;
export type Phase = (typeof PHASES)[number];
export const SOURCE_TYPES = ["slack", "jira", "confluence", "github"] as const;
export type SourceType = (typeof SOURCE_TYPES)[number];
export const VIEWS = ["overview", "branch", "milestone", "log", "metadata"] as const;
export type View = (typeof VIEWS)[number];
export const TIME_RANGES = ["1d", "7d", "14d", "30d", "90d", "all"] as const;
export type TimeRange = (typeof TIME_RANGES)[number];

export interface Project {
  projectId: string;
  tenantId: string;
  name: string;
  roadmap: string;
  milestoneCount: number;
  activeBranches: string[];
  createdAt: string;
  updatedAt: string;
}

export interface Milestone {
  milestoneId: string;
  projectId: string;
  branchName: string;
  branchPurpose: string;
  cumulativeProgress: string;
  thisContribution: string;
  /** exact signed 64-bit integer (written as a bare JSON integer, json.ts) */
  contentHash: bigint;
  /** the same 64 bits as 16 hex digits, for clients whose JSON parser rounds big integers */
  contentHashHex: string;
  sequenceNumber: number;
  agentId: string;
  agentType: string;
  /** the merged branch, on a merge milestone; null otherwise */
  mergedFrom: string | null;
  createdAt: string;
}

export interface LogEntry {
  entryId: string;
  projectId: string;
  branchName: string;
  agentId: string;
  phase: Phase;
  sequenceNumber: number;
  createdAt: string;
  content?: string;
}

export interface Branch {
  projectId: string;
  branchName: string;
  parentBranch: string | null;
  purpose: string;
  status: BranchStatus;
  agentId: string;
  createdAt: string;
  abandonReason: string | null;
  /** target branch and merge milestone once merged; null otherwise */
  mergedInto: string | null;
  mergeMilestoneId: string | null;
  milestoneCount: number;
  updatedAt: string;
}

export interface Contributor {
  contributorId: string;
  tenantId: string;
  displayName: string;
  agentIds: string[];
  role: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface ExternalSource {
  sourceId: string;
  tenantId: string;
  projectId: string;
  sourceType: SourceType;
  config: Record<string, unknown>;
  syncCursor: string;
  lastSyncedAt: string | null;
  enabled: boolean;
  createdAt: string;
  updatedAt: string;
  lastError: string | null;
  itemsSynced: number;
}

export interface Session {
  sessionId: string;
  projectId: string;
  branchName: string;
  agentId: string;
  agentType: string;
  milestonesRecalled: number;
  compactionCount: number;
  toolCallsTotal: number;
  toolCallsRead: number;
  toolCallsSearch: number;
  toolCallsEdit: number;
  toolCallsExecute: number;
  toolCallsAgent: number;
  sessionDurationSecs: number;
  startedAt: string;
  endedAt: string;
  createdAt: string;
}

/** A document synced from an external source. */
export interface DocumentInput {
  externalId: string;
  kind: string;
  title: string;
  body: string;
  url: string | null;
  author: string | null;
  updatedAt: string;
}

export const f32Blob = (v: Float32Array) => new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
export const blobF32 = (b: Uint8Array) => new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
