/** TypeBox request schemas of the Memory API: every field limit of doc1 §8 lives here (400 validation_error naming the field). */
import { t } from "elysia";
import { limitOffsetQuery } from "../core/pagination";
import { PHASES, SOURCE_TYPES, TIME_RANGES, VIEWS } from "./types";

export const LIMITS = {
  projectId: 128,
  name: 256,
  branchName: 256,
  roadmap: 10_000,
  branchPurpose: 2_000,
  cumulativeProgress: 50_000,
  thisContribution: 10_000,
  logContent: 50_000,
  mergeSummary: 50_000,
  summary: 10_000,
  query: 500,
  question: 2_000,
  sessionId: 128,
  contributorId: 128,
  displayName: 256,
  sourceId: 128,
  /** not in §8: bounds we chose (docs/decisions.md) */
  agentId: 256,
  agentType: 128,
  reason: 2_000,
  role: 256,
  cacheKey: 1_024,
  l2Collection: 256,
  blobKey: 1_024,
  agentIds: 100,
  projectIds: 1_000,
  segment: 64,
  embedding: 8_192,
} as const;

/** An enum as a union of literals (no implicit default, unlike an optional UnionEnum). */
const OneOf = <V extends string>(values: readonly V[]) => t.Union(values.map((v) => t.Literal(v)));
const Str = (max: number, min = 1) => t.String({ minLength: min, maxLength: max });
/**
 * An identifier the client later puts in a URL path segment: "." and ".." are refused, because every
 * URL client (fetch, curl, browsers) resolves them as dot segments — `/projects/..` reaches `/` — so
 * a record named so could never be read, changed or deleted again.
 */
const PathId = (max: number, extra = "") => t.String({ minLength: 1, maxLength: max, pattern: `^(?!\\.{1,2}$)${extra}` });
const Count = () => t.Integer({ minimum: 0, maximum: 2_147_483_647 });

export const ProjectParams = t.Object({ id: Str(LIMITS.projectId) });
export const BranchParams = t.Object({ id: Str(LIMITS.projectId), name: Str(LIMITS.branchName) });
export const SegmentParams = t.Object({ id: Str(LIMITS.projectId), segment: t.String({ pattern: "^[A-Za-z0-9_.-]{1,64}$" }) });
export const IdParams = t.Object({ id: Str(128) });

export const ListQuery = t.Object(limitOffsetQuery(50, 200));
export const SourceListQuery = t.Object({ ...limitOffsetQuery(50, 200), projectId: t.Optional(Str(LIMITS.projectId)) });
export const ActivityQuery = t.Object(limitOffsetQuery(50, 200));

export const ProjectCreate = t.Object({ projectId: PathId(LIMITS.projectId), name: Str(LIMITS.name), roadmap: Str(LIMITS.roadmap, 0) });
export const RoadmapUpdate = t.Object({ roadmap: Str(LIMITS.roadmap) });

export const Store = t.Object({
  branchName: t.Optional(Str(LIMITS.branchName)),
  branchPurpose: Str(LIMITS.branchPurpose),
  cumulativeProgress: Str(LIMITS.cumulativeProgress),
  thisContribution: Str(LIMITS.thisContribution),
  agentId: Str(LIMITS.agentId),
  agentType: t.Optional(Str(LIMITS.agentType)),
});

export const RecallQuery = t.Object({
  view: t.Optional(OneOf(VIEWS)),
  branch: t.Optional(Str(LIMITS.branchName)),
  milestoneId: t.Optional(Str(128)),
  segment: t.Optional(t.String({ pattern: "^[A-Za-z0-9_.-]{1,64}$" })),
  limit: t.Optional(t.Integer({ minimum: 1, maximum: 200 })),
  offset: t.Optional(t.Integer({ minimum: 0, maximum: 2_147_483_647 })),
});

export const Log = t.Object({
  branchName: t.Optional(Str(LIMITS.branchName)),
  agentId: Str(LIMITS.agentId),
  phase: OneOf(PHASES),
  content: Str(LIMITS.logContent),
});

export const BranchCreate = t.Object({
  branchName: PathId(LIMITS.branchName, "[^/\\s][^/]*$"),
  parentBranch: t.Optional(Str(LIMITS.branchName)),
  purpose: Str(LIMITS.branchPurpose),
  agentId: Str(LIMITS.agentId),
});

export const Abandon = t.Object({ reason: Str(LIMITS.reason) });

export const Merge = t.Object({
  sourceBranch: Str(LIMITS.branchName),
  targetBranch: t.Optional(Str(LIMITS.branchName)),
  mergeSummary: Str(LIMITS.mergeSummary),
  agentId: Str(LIMITS.agentId),
});

export const ProjectSearch = t.Object({ query: Str(LIMITS.query), limit: t.Optional(t.Integer({ minimum: 1, maximum: 100 })) });
export const CrossSearch = t.Object({
  query: Str(LIMITS.query),
  limit: t.Optional(t.Integer({ minimum: 1, maximum: 200 })),
  projectIds: t.Optional(t.Array(Str(LIMITS.projectId), { maxItems: LIMITS.projectIds })),
});

export const Metrics = t.Object({
  sessionId: Str(LIMITS.sessionId),
  branchName: t.Optional(Str(LIMITS.branchName)),
  agentId: Str(LIMITS.agentId),
  agentType: t.Optional(Str(LIMITS.agentType, 0)),
  milestonesRecalled: Count(),
  compactionCount: t.Optional(Count()),
  toolCallsTotal: Count(),
  toolCallsRead: t.Optional(Count()),
  toolCallsSearch: t.Optional(Count()),
  toolCallsEdit: t.Optional(Count()),
  toolCallsExecute: t.Optional(Count()),
  toolCallsAgent: t.Optional(Count()),
  sessionDurationSecs: Count(),
  startedAt: t.String({ format: "date-time" }),
  endedAt: t.String({ format: "date-time" }),
});

export const Promote = t.Object({
  cacheKey: Str(LIMITS.cacheKey),
  reuseScore: t.Number({ minimum: 0, maximum: 1 }),
  summary: Str(LIMITS.summary),
  summaryEmbedding: t.Optional(t.Array(t.Number(), { minItems: 1, maxItems: LIMITS.embedding })),
  l2Collection: Str(LIMITS.l2Collection),
  blobKey: t.Optional(Str(LIMITS.blobKey)),
});

export const SegmentPut = t.Object({ data: t.Record(t.String(), t.Unknown()) });

export const Contributor = t.Object({
  contributorId: PathId(LIMITS.contributorId),
  displayName: Str(LIMITS.displayName),
  agentIds: t.Optional(t.Array(Str(LIMITS.agentId), { maxItems: LIMITS.agentIds })),
  /** null clears it on an update; left out = unchanged */
  role: t.Optional(t.Union([Str(LIMITS.role), t.Null()])),
});

const Config = t.Record(t.String(), t.Unknown());
export const SourceCreate = t.Object({
  sourceId: PathId(LIMITS.sourceId),
  projectId: Str(LIMITS.projectId),
  sourceType: OneOf(SOURCE_TYPES),
  config: t.Optional(Config),
});
export const SourceUpdate = t.Object({
  projectId: t.Optional(Str(LIMITS.projectId)),
  sourceType: t.Optional(OneOf(SOURCE_TYPES)),
  config: t.Optional(Config),
  enabled: t.Optional(t.Boolean()),
});

export const IntelligenceQuery = t.Object({
  question: Str(LIMITS.question),
  projectIds: t.Optional(t.Array(Str(LIMITS.projectId), { maxItems: LIMITS.projectIds })),
  contributorFilter: t.Optional(Str(LIMITS.contributorId > LIMITS.displayName ? LIMITS.contributorId : LIMITS.displayName)),
  timeRange: t.Optional(OneOf(TIME_RANGES)),
  includeExternalSources: t.Optional(t.Boolean()),
  contextLimit: t.Optional(t.Integer({ minimum: 1, maximum: 200 })),
});

export const IntelligenceAction = t.Object({ action: Str(64), params: t.Record(t.String(), t.Unknown()) });
