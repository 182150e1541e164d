import type { TokenUsage } from "../core/usage";
/** Domain records of prompts, versions, runs, folders and chains (API field names, doc1 §2.3). */
import type { Variable } from "./template";

export const PROMPT_STATUSES = ["DRAFT", "PUBLISHED", "ARCHIVED"] as const;
export type PromptStatus = (typeof PROMPT_STATUSES)[number];

/** Run statuses: a dry run renders only; a model call ends COMPLETED or FAILED. */
export const RUN_STATUSES = ["COMPLETED", "FAILED", "DRY_RUN"] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

export const TRANSFORMS = ["passThrough", "extractField", "template"] as const;
export type Transform = (typeof TRANSFORMS)[number];

export interface Prompt {
  id: string;
  name: string;
  slug: string;
  description: string;
  template: string;
  variables: Variable[];
  model: string | null;
  temperature: number | null;
  maxTokens: number | null;
  tags: string[];
  folderId: string | null;
  status: PromptStatus;
  currentVersion: number;
  createdBy: string;
  createdAt: string;
  updatedAt: string;
}

export interface PromptVersion {
  id: string;
  promptId: string;
  version: number;
  template: string;
  variables: Variable[];
  model: string | null;
  temperature: number | null;
  maxTokens: number | null;
  message: string | null;
  createdBy: string;
  createdAt: string;
}

/** Token counts as prompt runs report them (doc1 §4.9: promptTokens, completionTokens, totalTokens). */
export interface RunUsage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
}

export interface Run {
  runId: string;
  promptId: string;
  version: number;
  status: RunStatus;
  model: string | null;
  variables: Record<string, unknown>;
  renderedPrompt: string;
  response: string | null;
  usage: RunUsage;
  cacheHit: boolean;
  dryRun: boolean;
  durationMs: number;
  error: string | null;
  createdBy: string;
  createdAt: string;
}

export interface Folder {
  id: string;
  name: string;
  parentId: string | null;
  createdBy: string;
  createdAt: string;
  updatedAt: string;
}

export interface ChainStep {
  modelId: string;
  systemPrompt?: string;
  transform?: Transform;
  /** extractField: JSON path into the previous output, e.g. `$.summary` or `items[0].title` */
  field?: string;
  /** template: text with `{{input}}` where the previous output goes */
  template?: string;
  maxTokens?: number;
  temperature?: number;
}

export interface Chain {
  id: string;
  name: string;
  description: string;
  steps: ChainStep[];
  workspaceId: string;
  createdBy: string;
  createdAt: string;
  updatedAt: string;
}

/** Who is calling: the tenant and the token's `sub`. */
export interface Actor {
  tenantId: string;
  sub: string;
}

/** The spec's spelling of token usage on runs and execute responses. */
export const runUsage = (u: TokenUsage): RunUsage => ({ promptTokens: u.inputTokens, completionTokens: u.outputTokens, totalTokens: u.inputTokens + u.outputTokens });

/** Who acts: the caller's tenant and subject. */
export const actorOf = (p: { tenantId: string; sub: string }): Actor => ({ tenantId: p.tenantId, sub: p.sub });
/** Deletes answer 200 `{deleted: true, id}` (docs/decisions.md). */
export const deleted = (id: string) => ({ deleted: true as const, id });
/** OpenAPI tag of a route */
export const tag = (t: string) => ({ tags: [t] });
