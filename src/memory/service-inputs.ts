/** What the Memory service's write and read methods take (service.ts), as the routes hand them in. */
import type { View } from "./types";

export interface StoreInput {
  branchName?: string;
  branchPurpose: string;
  cumulativeProgress: string;
  thisContribution: string;
  agentId: string;
  agentType?: string;
}

export interface RecallQuery {
  view?: View;
  branch?: string;
  milestoneId?: string;
  segment?: string;
  limit?: number;
  offset?: number;
}

export interface SessionInput {
  sessionId: string;
  branchName?: string;
  agentId: string;
  agentType?: string;
  milestonesRecalled: number;
  compactionCount?: number;
  toolCallsTotal: number;
  toolCallsRead?: number;
  toolCallsSearch?: number;
  toolCallsEdit?: number;
  toolCallsExecute?: number;
  toolCallsAgent?: number;
  sessionDurationSecs: number;
  startedAt: string;
  endedAt: string;
}

export interface PromoteInput {
  cacheKey: string;
  reuseScore: number;
  summary: string;
  summaryEmbedding?: number[];
  l2Collection: string;
  blobKey?: string;
}
