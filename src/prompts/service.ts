/**
 * Prompt business rules: slugs, automatic variables, immutable versions (create = v1, changed
 * template = N+1, explicit versions, rollback), diffs, status moves, duplicate, and execution
 * through the gateway's own pipeline (same cache, same upstream adapters) with every execution
 * recorded as a run. Plain functions over a PromptStore: tests call them without HTTP.
 */
import { structuredPatch, formatPatch, FILE_HEADERS_ONLY } from "diff";
import { ApiError, badRequest, invalidRequest, notFound } from "../core/errors";
import { uuid, now } from "../core/ids";
import type { Page } from "../core/pagination";
import type { ForTenant } from "../storage/scoped";
import type { GatewayService } from "../gateway/types";
import type { FolderStore, Listed, PromptFilter, PromptStore, RunFilter } from "./repository";
import { estimateTokens, extractVariables, render, type Variable } from "./template";
import type { Actor, Prompt, PromptStatus, PromptVersion, Run } from "./types";

export interface CreatePromptInput {
  name: string;
  template: string;
  description?: string;
  model?: string;
  temperature?: number;
  maxTokens?: number;
  tags?: string[];
  folderId?: string | null;
  status?: PromptStatus;
}

export interface UpdatePromptInput extends Partial<Omit<CreatePromptInput, "model" | "temperature" | "maxTokens">> {
  /** null clears the prompt's default */
  model?: string | null;
  temperature?: number | null;
  maxTokens?: number | null;
  message?: string;
}

export interface VersionInput {
  template: string;
  model?: string;
  temperature?: number;
  maxTokens?: number;
  message?: string;
}

export interface ExecuteInput {
  variables?: Record<string, unknown>;
  version?: number;
  model?: string;
  temperature?: number;
  maxTokens?: number;
  dryRun?: boolean;
}

export interface ExecuteResult {
  runId: string;
  renderedPrompt: string;
  estimatedTokens: number;
  response: string;
  usage: { promptTokens: number; completionTokens: number; totalTokens: number };
  cacheHit: boolean;
  durationMs: number;
  dryRun: boolean;
  model: string | null;
  version: number;
}

export interface DiffResult {
  fromVersion: number;
  toVersion: number;
  templateDiff: string;
  variablesAdded: Variable[];
  variablesRemoved: Variable[];
  variablesChanged: Array<{ name: string; from: Omit<Variable, "name">; to: Omit<Variable, "name"> }>;
  stats: { additions: number; deletions: number; totalChanges: number };
}

/**
 * Allowed status moves: DRAFT <-> PUBLISHED, DRAFT|PUBLISHED -> ARCHIVED, ARCHIVED -> DRAFT
 * (restore, then publish again). Setting the current status again is a no-op.
 */
const STATUS_MOVES: Record<PromptStatus, PromptStatus[]> = {
  DRAFT: ["PUBLISHED", "ARCHIVED"],
  PUBLISHED: ["DRAFT", "ARCHIVED"],
  ARCHIVED: ["DRAFT"],
};

export const SLUG_MAX = 96;

/** Lower-case ASCII words joined by '-', accents folded; "prompt" when nothing is left. */
export function slugify(name: string): string {
  const s = name
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, SLUG_MAX)
    .replace(/-+$/g, "");
  return s || "prompt";
}

export class PromptService {
  constructor(
    private readonly stores: ForTenant<PromptStore>,
    private readonly folders: ForTenant<FolderStore>,
    /** resolved per call so a gateway set on the context after start-up is picked up */
    private readonly gateway: () => GatewayService | undefined,
  ) {}

  private must(store: PromptStore, id: string): Prompt {
    const p = store.getPrompt(id);
    if (!p) throw notFound(`prompt '${id}'`);
    return p;
  }

  private checkFolder(tenantId: string, folderId: string | null | undefined) {
    if (folderId && !this.folders(tenantId).get(folderId)) throw notFound(`folder '${folderId}'`);
  }

  /** The base slug, or base-2, base-3, ... whichever is free first (call inside a transaction). */
  private freeSlug(store: PromptStore, name: string): string {
    const base = slugify(name);
    const taken = new Set(store.slugsLike(base));
    if (!taken.has(base)) return base;
    for (let n = 2; ; n++) if (!taken.has(`${base}-${n}`)) return `${base}-${n}`;
  }

  private newVersion(p: Prompt, actor: Actor, message: string | null | undefined, at: string): PromptVersion {
    return {
      id: uuid(),
      promptId: p.id,
      version: p.currentVersion,
      template: p.template,
      variables: p.variables,
      model: p.model,
      temperature: p.temperature,
      maxTokens: p.maxTokens,
      message: message ?? null,
      createdBy: actor.sub,
      createdAt: at,
    };
  }

  create(actor: Actor, input: CreatePromptInput, firstMessage?: string): Prompt {
    const variables = extractVariables(input.template);
    this.checkFolder(actor.tenantId, input.folderId);
    const store = this.stores(actor.tenantId);
    return store.tx(() => {
      const at = now();
      const p: Prompt = {
        id: uuid(),
        name: input.name,
        slug: this.freeSlug(store, input.name),
        description: input.description ?? "",
        template: input.template,
        variables,
        model: input.model ?? null,
        temperature: input.temperature ?? null,
        maxTokens: input.maxTokens ?? null,
        tags: dedupe(input.tags ?? []),
        folderId: input.folderId ?? null,
        status: input.status ?? "DRAFT",
        currentVersion: 1,
        createdBy: actor.sub,
        createdAt: at,
        updatedAt: at,
      };
      store.insertPrompt(p);
      store.insertVersion(this.newVersion(p, actor, firstMessage ?? "Initial version", at));
      return p;
    });
  }

  get(actor: Actor, id: string): Prompt {
    return this.must(this.stores(actor.tenantId), id);
  }

  list(actor: Actor, filter: PromptFilter, page: Page): Listed<Prompt> {
    return this.stores(actor.tenantId).listPrompts(filter, page);
  }

  update(actor: Actor, id: string, input: UpdatePromptInput): Prompt {
    const variables = input.template !== undefined ? extractVariables(input.template) : undefined;
    if (input.folderId !== undefined) this.checkFolder(actor.tenantId, input.folderId);
    const store = this.stores(actor.tenantId);
    return store.tx(() => {
      const cur = this.must(store, id);
      if (input.status !== undefined && input.status !== cur.status && !STATUS_MOVES[cur.status].includes(input.status))
        throw invalidRequest(`prompt status cannot move from ${cur.status} to ${input.status} (allowed: ${STATUS_MOVES[cur.status].join(", ")})`);
      const templateChanged = input.template !== undefined && input.template !== cur.template;
      const at = now();
      const next: Prompt = {
        ...cur,
        name: input.name ?? cur.name,
        description: input.description ?? cur.description,
        model: input.model !== undefined ? input.model : cur.model,
        temperature: input.temperature !== undefined ? input.temperature : cur.temperature,
        maxTokens: input.maxTokens !== undefined ? input.maxTokens : cur.maxTokens,
        tags: input.tags ? dedupe(input.tags) : cur.tags,
        folderId: input.folderId !== undefined ? input.folderId : cur.folderId,
        status: input.status ?? cur.status,
        template: templateChanged ? input.template! : cur.template,
        variables: templateChanged ? variables! : cur.variables,
        currentVersion: templateChanged ? cur.currentVersion + 1 : cur.currentVersion,
        updatedAt: at,
      };
      store.updatePrompt(next);
      if (templateChanged) store.insertVersion(this.newVersion(next, actor, input.message, at));
      return next;
    });
  }

  delete(actor: Actor, id: string): void {
    if (!this.stores(actor.tenantId).deletePrompt(id)) throw notFound(`prompt '${id}'`);
  }

  duplicate(actor: Actor, id: string, input: { name?: string; folderId?: string | null }): Prompt {
    const src = this.get(actor, id);
    return this.create(
      actor,
      {
        name: input.name ?? `${src.name} (copy)`.slice(0, 256),
        template: src.template,
        description: src.description,
        model: src.model ?? undefined,
        temperature: src.temperature ?? undefined,
        maxTokens: src.maxTokens ?? undefined,
        tags: src.tags,
        folderId: input.folderId !== undefined ? input.folderId : src.folderId,
        status: "DRAFT",
      },
      `Duplicated from ${src.slug} version ${src.currentVersion}`,
    );
  }

  // ---- versions ----

  /** Always records a new version N+1 (even if the template is unchanged) and makes it current. */
  addVersion(actor: Actor, id: string, input: VersionInput): PromptVersion {
    const variables = extractVariables(input.template);
    const store = this.stores(actor.tenantId);
    return store.tx(() => {
      const cur = this.must(store, id);
      const at = now();
      const next: Prompt = {
        ...cur,
        template: input.template,
        variables,
        model: input.model ?? cur.model,
        temperature: input.temperature ?? cur.temperature,
        maxTokens: input.maxTokens ?? cur.maxTokens,
        currentVersion: cur.currentVersion + 1,
        updatedAt: at,
      };
      store.updatePrompt(next);
      const v = this.newVersion(next, actor, input.message, at);
      store.insertVersion(v);
      return v;
    });
  }

  /** New version N+1 with version V's template, model, temperature and maxTokens. */
  rollback(actor: Actor, id: string, version: number, message?: string): PromptVersion {
    const store = this.stores(actor.tenantId);
    return store.tx(() => {
      const cur = this.must(store, id);
      const old = store.getVersion(id, version);
      if (!old) throw notFound(`version ${version} of prompt '${id}'`);
      const at = now();
      const next: Prompt = {
        ...cur,
        template: old.template,
        variables: old.variables,
        model: old.model,
        temperature: old.temperature,
        maxTokens: old.maxTokens,
        currentVersion: cur.currentVersion + 1,
        updatedAt: at,
      };
      store.updatePrompt(next);
      const v = this.newVersion(next, actor, message ?? `Rollback to version ${version}`, at);
      store.insertVersion(v);
      return v;
    });
  }

  listVersions(actor: Actor, id: string, page: Page): Listed<PromptVersion> {
    const store = this.stores(actor.tenantId);
    this.must(store, id);
    return store.listVersions(id, page);
  }

  getVersion(actor: Actor, id: string, version: number): PromptVersion {
    const store = this.stores(actor.tenantId);
    this.must(store, id);
    const v = store.getVersion(id, version);
    if (!v) throw notFound(`version ${version} of prompt '${id}'`);
    return v;
  }

  diff(actor: Actor, id: string, fromVersion: number, toVersion: number): DiffResult {
    const a = this.getVersion(actor, id, fromVersion);
    const b = this.getVersion(actor, id, toVersion);
    const patch = structuredPatch(`v${fromVersion}`, `v${toVersion}`, a.template, b.template, undefined, undefined, { context: 3 });
    let additions = 0;
    let deletions = 0;
    for (const h of patch.hunks)
      for (const l of h.lines) {
        if (l.startsWith("+")) additions++;
        else if (l.startsWith("-")) deletions++;
      }
    const before = new Map(a.variables.map((v) => [v.name, v]));
    const after = new Map(b.variables.map((v) => [v.name, v]));
    const variablesChanged: DiffResult["variablesChanged"] = [];
    for (const [name, v] of after) {
      const o = before.get(name);
      if (o && (o.varType !== v.varType || o.defaultValue !== v.defaultValue))
        variablesChanged.push({ name, from: { varType: o.varType, defaultValue: o.defaultValue }, to: { varType: v.varType, defaultValue: v.defaultValue } });
    }
    return {
      fromVersion,
      toVersion,
      templateDiff: patch.hunks.length ? formatPatch(patch, FILE_HEADERS_ONLY) : "",
      variablesAdded: b.variables.filter((v) => !before.has(v.name)),
      variablesRemoved: a.variables.filter((v) => !after.has(v.name)),
      variablesChanged,
      stats: { additions, deletions, totalChanges: additions + deletions },
    };
  }

  // ---- execution ----

  /**
   * Render the chosen version and (unless dryRun) send it as one user message through the
   * gateway. The run is recorded whatever happens; a failed model call is recorded FAILED and
   * its ApiError is re-thrown.
   */
  async execute(actor: Actor, id: string, input: ExecuteInput, opts: { requestId?: string } = {}): Promise<ExecuteResult> {
    const store = this.stores(actor.tenantId);
    const prompt = this.must(store, id);
    const versionNo = input.version ?? prompt.currentVersion;
    const v = store.getVersion(id, versionNo);
    if (!v) throw notFound(`version ${versionNo} of prompt '${id}'`);
    const variables = input.variables ?? {};
    const renderedPrompt = render(v.template, variables);
    const estimatedTokens = estimateTokens(renderedPrompt);
    const dryRun = input.dryRun === true;
    // Settings: the request's, else those of an explicitly chosen older version, else the prompt's
    // (a PUT may change the prompt's model/temperature/maxTokens without a new version, and the
    // prompt's `model` is the default model for execution — the current version's copy can be stale).
    const pinned = input.version !== undefined && input.version !== prompt.currentVersion ? v : undefined;
    const model = input.model ?? (pinned ? (pinned.model ?? prompt.model) : prompt.model);
    const temperature = input.temperature ?? (pinned ? (pinned.temperature ?? prompt.temperature) : prompt.temperature) ?? undefined;
    const maxTokens = input.maxTokens ?? (pinned ? (pinned.maxTokens ?? prompt.maxTokens) : prompt.maxTokens) ?? undefined;
    const base: Run = {
      runId: uuid(),
      promptId: id,
      version: versionNo,
      status: "DRY_RUN",
      model: model ?? null,
      variables,
      renderedPrompt,
      response: null,
      usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 },
      cacheHit: false,
      dryRun,
      durationMs: 0,
      error: null,
      createdBy: actor.sub,
      createdAt: now(),
    };
    const result = (r: Run): ExecuteResult => ({
      runId: r.runId,
      renderedPrompt,
      estimatedTokens,
      response: r.response ?? "",
      usage: r.usage,
      cacheHit: r.cacheHit,
      durationMs: r.durationMs,
      dryRun,
      model: r.model,
      version: versionNo,
    });
    if (dryRun) {
      store.insertRun(base);
      return result(base);
    }
    if (prompt.status === "ARCHIVED") throw invalidRequest(`prompt '${id}' is ARCHIVED; move it to DRAFT or PUBLISHED to execute it (dry runs still work)`);
    if (!model) throw badRequest("no model to execute with: set 'model' on the prompt, the version or the request");
    const gateway = this.gateway();
    if (!gateway) throw new ApiError("service_unavailable", "the model gateway is not available");
    const started = performance.now();
    try {
      const out = await gateway.complete({
        tenantId: actor.tenantId,
        model,
        messages: [{ role: "user", content: renderedPrompt }],
        temperature,
        maxTokens,
        requestId: opts.requestId,
      });
      const run: Run = {
        ...base,
        status: "COMPLETED",
        model: out.model || model,
        response: out.text,
        usage: { promptTokens: out.usage.promptTokens, completionTokens: out.usage.completionTokens, totalTokens: out.usage.promptTokens + out.usage.completionTokens },
        cacheHit: out.cacheHit,
        durationMs: Math.round(performance.now() - started),
      };
      store.insertRun(run);
      return result(run);
    } catch (e) {
      const err = e instanceof ApiError ? e : new ApiError("internal_error", "model call failed");
      store.insertRun({ ...base, status: "FAILED", error: `${err.type}: ${err.message}`, durationMs: Math.round(performance.now() - started) });
      throw err;
    }
  }

  listRuns(actor: Actor, id: string, filter: RunFilter, page: Page): Listed<Run> {
    const store = this.stores(actor.tenantId);
    this.must(store, id);
    return store.listRuns(id, filter, page);
  }

  getRun(actor: Actor, id: string, runId: string): Run {
    const store = this.stores(actor.tenantId);
    this.must(store, id);
    const r = store.getRun(id, runId);
    if (!r) throw notFound(`run '${runId}' of prompt '${id}'`);
    return r;
  }
}

const dedupe = (xs: string[]) => [...new Set(xs)];
