/** TypeBox request schemas of prompts, folders and chains: every field limit lives here (400 validation_error). */
import { t } from "elysia";
import { pageQuery } from "../core/pagination";

const PageQuery = pageQuery();
import { PROMPT_STATUSES, RUN_STATUSES, TRANSFORMS } from "./types";

export const LIMITS = {
  name: 256,
  description: 2_000,
  template: 100_000,
  model: 128,
  tags: 50,
  tag: 64,
  message: 1_000,
  search: 500,
  steps: 20,
  systemPrompt: 100_000,
  field: 256,
  messages: 500,
  content: 1_000_000,
  maxTokens: 1_000_000,
} as const;

/**
 * An enum as a union of literals. Not t.UnionEnum: Elysia gives an optional UnionEnum its first
 * value as a default, so an omitted `status` filter would silently become DRAFT.
 */
const OneOf = <V extends string>(values: readonly V[]) => t.Union(values.map((v) => t.Literal(v)));

const Uuid = t.String({ format: "uuid" });
const Name = t.String({ minLength: 1, maxLength: LIMITS.name });
const Template = t.String({ minLength: 1, maxLength: LIMITS.template });
const Model = t.String({ minLength: 1, maxLength: LIMITS.model });
const Temperature = t.Number({ minimum: 0, maximum: 2 });
const MaxTokens = t.Integer({ minimum: 1, maximum: LIMITS.maxTokens });
const Message = t.String({ maxLength: LIMITS.message });
const Status = OneOf(PROMPT_STATUSES);

export const IdParams = t.Object({ id: t.String({ minLength: 1, maxLength: 128 }) });
export const VersionParams = t.Object({ id: t.String({ minLength: 1, maxLength: 128 }), version: t.Integer({ minimum: 1 }) });
export const RunParams = t.Object({ id: t.String({ minLength: 1, maxLength: 128 }), runId: t.String({ minLength: 1, maxLength: 128 }) });

export const PromptListQuery = t.Object({
  status: t.Optional(Status),
  folderId: t.Optional(Uuid),
  tag: t.Optional(t.String({ minLength: 1, maxLength: LIMITS.tag })),
  search: t.Optional(t.String({ maxLength: LIMITS.search })),
  ...PageQuery,
});

export const PromptCreate = t.Object({
  name: Name,
  template: Template,
  description: t.Optional(t.String({ maxLength: LIMITS.description })),
  model: t.Optional(Model),
  temperature: t.Optional(Temperature),
  maxTokens: t.Optional(MaxTokens),
  tags: t.Optional(t.Array(t.String({ minLength: 1, maxLength: LIMITS.tag }), { maxItems: LIMITS.tags })),
  folderId: t.Optional(t.Nullable(Uuid)),
  status: t.Optional(Status),
});

/** Partial update; `null` clears the optional execution defaults (model, temperature, maxTokens). */
export const PromptUpdate = t.Object({
  name: t.Optional(Name),
  template: t.Optional(Template),
  description: t.Optional(t.String({ maxLength: LIMITS.description })),
  model: t.Optional(t.Nullable(Model)),
  temperature: t.Optional(t.Nullable(Temperature)),
  maxTokens: t.Optional(t.Nullable(MaxTokens)),
  tags: t.Optional(t.Array(t.String({ minLength: 1, maxLength: LIMITS.tag }), { maxItems: LIMITS.tags })),
  folderId: t.Optional(t.Nullable(Uuid)),
  status: t.Optional(Status),
  message: t.Optional(Message),
});

export const PromptDuplicate = t.Object({
  name: t.Optional(Name),
  folderId: t.Optional(t.Nullable(Uuid)),
});

export const VersionCreate = t.Object({
  template: Template,
  model: t.Optional(Model),
  temperature: t.Optional(Temperature),
  maxTokens: t.Optional(MaxTokens),
  message: t.Optional(Message),
});

export const DiffQuery = t.Object({
  fromVersion: t.Integer({ minimum: 1 }),
  toVersion: t.Integer({ minimum: 1 }),
});

export const Rollback = t.Object({
  version: t.Integer({ minimum: 1 }),
  message: t.Optional(Message),
});

export const Execute = t.Object({
  variables: t.Optional(t.Record(t.String({ maxLength: 256 }), t.Unknown())),
  version: t.Optional(t.Integer({ minimum: 1 })),
  model: t.Optional(Model),
  temperature: t.Optional(Temperature),
  maxTokens: t.Optional(MaxTokens),
  dryRun: t.Optional(t.Boolean()),
});

export const RunListQuery = t.Object({
  status: t.Optional(OneOf(RUN_STATUSES)),
  version: t.Optional(t.Integer({ minimum: 1 })),
  ...PageQuery,
});

// ---- folders ----

export const FolderListQuery = t.Object({ parentId: t.Optional(Uuid), ...PageQuery });
export const FolderCreate = t.Object({ name: Name, parentId: t.Optional(t.Nullable(Uuid)) });
export const FolderUpdate = t.Object({ name: t.Optional(Name), parentId: t.Optional(t.Nullable(Uuid)) });

// ---- chains ----

export const ChainStepSchema = t.Object({
  modelId: Model,
  systemPrompt: t.Optional(t.String({ maxLength: LIMITS.systemPrompt })),
  transform: t.Optional(OneOf(TRANSFORMS)),
  field: t.Optional(t.String({ minLength: 1, maxLength: LIMITS.field })),
  template: t.Optional(t.String({ minLength: 1, maxLength: LIMITS.template })),
  maxTokens: t.Optional(MaxTokens),
  temperature: t.Optional(Temperature),
});

export const ChainBody = t.Object({
  name: Name,
  description: t.Optional(t.String({ maxLength: LIMITS.description })),
  steps: t.Array(ChainStepSchema, { minItems: 1, maxItems: LIMITS.steps }),
});

export const PageOnlyQuery = t.Object({ ...PageQuery });

const TextPart = t.Object({ type: t.String(), text: t.Optional(t.String()) });
export const ChainExecute = t.Object({
  messages: t.Array(
    t.Object({
      role: OneOf(["system", "user", "assistant"] as const),
      content: t.Union([t.String({ maxLength: LIMITS.content }), t.Array(TextPart, { maxItems: 100 })]),
    }),
    { minItems: 1, maxItems: LIMITS.messages },
  ),
});
