/**
 * Prompts, their versions and runs, over the tenant-bound handle (every statement scoped to the
 * caller's tenant). A Postgres backend implements the same handle; the services never see SQL.
 */
import type { TenantDb } from "../storage/scoped";
import type { Page, Listed } from "../core/pagination";
import { searchKey, searchTextOf } from "./search";
import type { Prompt, PromptStatus, PromptVersion, Run, RunStatus } from "./types";

export interface PromptFilter {
  status?: PromptStatus;
  folderId?: string;
  tag?: string;
  search?: string;
}

export interface RunFilter {
  status?: RunStatus;
  version?: number;
}

const json = <T>(s: string | null): T => (s === null ? (null as T) : (JSON.parse(s) as T));

// ---- prompts ----

interface PromptRow {
  id: string;
  name: string;
  slug: string;
  description: string;
  template: string;
  variables: string;
  model: string | null;
  temperature: number | null;
  max_tokens: number | null;
  tags: string;
  folder_id: string | null;
  status: PromptStatus;
  current_version: number;
  created_by: string;
  created_at: string;
  updated_at: string;
}

const promptOf = (r: PromptRow): Prompt => ({
  id: r.id,
  name: r.name,
  slug: r.slug,
  description: r.description,
  template: r.template,
  variables: json(r.variables),
  model: r.model,
  temperature: r.temperature,
  maxTokens: r.max_tokens,
  tags: json(r.tags),
  folderId: r.folder_id,
  status: r.status,
  currentVersion: r.current_version,
  createdBy: r.created_by,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

const promptParams = (p: Prompt) => ({
  id: p.id,
  name: p.name,
  slug: p.slug,
  description: p.description,
  template: p.template,
  variables: JSON.stringify(p.variables),
  model: p.model,
  temperature: p.temperature,
  max_tokens: p.maxTokens,
  tags: JSON.stringify(p.tags),
  folder_id: p.folderId,
  status: p.status,
  current_version: p.currentVersion,
  created_by: p.createdBy,
  created_at: p.createdAt,
  updated_at: p.updatedAt,
  search_text: searchTextOf(p.name, p.description),
});

interface VersionRow {
  id: string;
  prompt_id: string;
  version: number;
  template: string;
  variables: string;
  model: string | null;
  temperature: number | null;
  max_tokens: number | null;
  message: string | null;
  created_by: string;
  created_at: string;
}

const versionOf = (r: VersionRow): PromptVersion => ({
  id: r.id,
  promptId: r.prompt_id,
  version: r.version,
  template: r.template,
  variables: json(r.variables),
  model: r.model,
  temperature: r.temperature,
  maxTokens: r.max_tokens,
  message: r.message,
  createdBy: r.created_by,
  createdAt: r.created_at,
});

interface RunRow {
  id: string;
  prompt_id: string;
  version: number;
  status: RunStatus;
  model: string | null;
  variables: string;
  rendered_prompt: string;
  response: string | null;
  prompt_tokens: number;
  completion_tokens: number;
  cache_hit: number;
  dry_run: number;
  duration_ms: number;
  error: string | null;
  created_by: string;
  created_at: string;
}

const runOf = (r: RunRow): Run => ({
  runId: r.id,
  promptId: r.prompt_id,
  version: r.version,
  status: r.status,
  model: r.model,
  variables: json(r.variables),
  renderedPrompt: r.rendered_prompt,
  response: r.response,
  usage: { promptTokens: r.prompt_tokens, completionTokens: r.completion_tokens, totalTokens: r.prompt_tokens + r.completion_tokens },
  cacheHit: r.cache_hit === 1,
  dryRun: r.dry_run === 1,
  durationMs: r.duration_ms,
  error: r.error,
  createdBy: r.created_by,
  createdAt: r.created_at,
});

/** Escape LIKE wildcards so a search for "50%" matches the literal text. */
const likeEscape = (s: string) => s.replace(/[\\%_]/g, (c) => "\\" + c);

export class PromptStore {
  constructor(private readonly db: TenantDb) {}

  tx<T>(fn: () => T): T {
    return this.db.tx(fn);
  }

  insertPrompt(p: Prompt) {
    this.db.run(
      `INSERT INTO prompts (id, tenant_id, name, slug, description, template, variables, model, temperature, max_tokens, tags, folder_id, status, current_version, created_by, created_at, updated_at, search_text)
       VALUES ($id, $tenant, $name, $slug, $description, $template, $variables, $model, $temperature, $max_tokens, $tags, $folder_id, $status, $current_version, $created_by, $created_at, $updated_at, $search_text)`,
      promptParams(p),
    );
  }

  updatePrompt(p: Prompt) {
    const { created_by, created_at, slug, ...params } = promptParams(p);
    this.db.run(
      `UPDATE prompts SET name = $name, description = $description, template = $template, variables = $variables, model = $model,
         temperature = $temperature, max_tokens = $max_tokens, tags = $tags, folder_id = $folder_id, status = $status,
         current_version = $current_version, updated_at = $updated_at, search_text = $search_text
       WHERE tenant_id = $tenant AND id = $id`,
      params,
    );
  }

  getPrompt(id: string) {
    const r = this.db.get<PromptRow>("SELECT * FROM prompts WHERE tenant_id = $tenant AND id = $id", { id });
    return r && promptOf(r);
  }

  slugsLike(base: string) {
    return this.db
      .all<{ slug: string }>("SELECT slug FROM prompts WHERE tenant_id = $tenant AND (slug = $base OR slug LIKE $pattern ESCAPE '\\')", {
        base,
        pattern: likeEscape(base) + "-%",
      })
      .map((r) => r.slug);
  }

  listPrompts(f: PromptFilter, page: Page) {
    const where = ["tenant_id = $tenant"];
    const params: Record<string, string | number> = {};
    if (f.status) (where.push("status = $status"), (params.status = f.status));
    if (f.folderId) (where.push("folder_id = $folder"), (params.folder = f.folderId));
    if (f.tag !== undefined) (where.push("EXISTS (SELECT 1 FROM json_each(prompts.tags) WHERE json_each.value = $tag)"), (params.tag = f.tag));
    if (f.search) {
      where.push("search_text LIKE $search ESCAPE '\\'");
      params.search = `%${likeEscape(searchKey(f.search))}%`;
    }
    const w = where.join(" AND ");
    const total = this.db.get<{ n: number }>(`SELECT count(*) AS n FROM prompts WHERE ${w}`, params)!.n;
    const items = this.db
      .all<PromptRow>(`SELECT * FROM prompts WHERE ${w} ORDER BY updated_at DESC, id LIMIT $limit OFFSET $offset`, { ...params, limit: page.limit, offset: page.offset })
      .map(promptOf);
    return { items, total };
  }

  deletePrompt(id: string) {
    return this.db.tx(() => {
      this.db.run("DELETE FROM prompt_runs WHERE tenant_id = $tenant AND prompt_id = $id", { id });
      this.db.run("DELETE FROM prompt_versions WHERE tenant_id = $tenant AND prompt_id = $id", { id });
      return this.db.run("DELETE FROM prompts WHERE tenant_id = $tenant AND id = $id", { id }).changes > 0;
    });
  }

  insertVersion(v: PromptVersion) {
    this.db.run(
      `INSERT INTO prompt_versions (id, tenant_id, prompt_id, version, template, variables, model, temperature, max_tokens, message, created_by, created_at)
       VALUES ($id, $tenant, $prompt_id, $version, $template, $variables, $model, $temperature, $max_tokens, $message, $created_by, $created_at)`,
      {
        id: v.id,
        prompt_id: v.promptId,
        version: v.version,
        template: v.template,
        variables: JSON.stringify(v.variables),
        model: v.model,
        temperature: v.temperature,
        max_tokens: v.maxTokens,
        message: v.message,
        created_by: v.createdBy,
        created_at: v.createdAt,
      },
    );
  }

  getVersion(promptId: string, version: number) {
    const r = this.db.get<VersionRow>("SELECT * FROM prompt_versions WHERE tenant_id = $tenant AND prompt_id = $promptId AND version = $version", {
      promptId,
      version,
    });
    return r && versionOf(r);
  }

  listVersions(promptId: string, page: Page) {
    const total = this.db.get<{ n: number }>("SELECT count(*) AS n FROM prompt_versions WHERE tenant_id = $tenant AND prompt_id = $promptId", { promptId })!.n;
    const items = this.db
      .all<VersionRow>("SELECT * FROM prompt_versions WHERE tenant_id = $tenant AND prompt_id = $promptId ORDER BY version DESC LIMIT $limit OFFSET $offset", {
        promptId,
        limit: page.limit,
        offset: page.offset,
      })
      .map(versionOf);
    return { items, total };
  }

  insertRun(r: Run) {
    return this.db.run(
      `INSERT INTO prompt_runs (id, tenant_id, prompt_id, version, status, model, variables, rendered_prompt, response, prompt_tokens, completion_tokens, cache_hit, dry_run, duration_ms, error, created_by, created_at)
       SELECT $id, $tenant, $prompt_id, $version, $status, $model, $variables, $rendered_prompt, $response, $prompt_tokens, $completion_tokens, $cache_hit, $dry_run, $duration_ms, $error, $created_by, $created_at
       WHERE EXISTS (SELECT 1 FROM prompts WHERE tenant_id = $tenant AND id = $prompt_id)`,
      {
        id: r.runId,
        prompt_id: r.promptId,
        version: r.version,
        status: r.status,
        model: r.model,
        variables: JSON.stringify(r.variables),
        rendered_prompt: r.renderedPrompt,
        response: r.response,
        prompt_tokens: r.usage.promptTokens,
        completion_tokens: r.usage.completionTokens,
        cache_hit: r.cacheHit ? 1 : 0,
        dry_run: r.dryRun ? 1 : 0,
        duration_ms: r.durationMs,
        error: r.error,
        created_by: r.createdBy,
        created_at: r.createdAt,
      },
    ).changes > 0;
  }

  getRun(promptId: string, runId: string) {
    const r = this.db.get<RunRow>("SELECT * FROM prompt_runs WHERE tenant_id = $tenant AND prompt_id = $promptId AND id = $runId", { promptId, runId });
    return r && runOf(r);
  }

  listRuns(promptId: string, f: RunFilter, page: Page) {
    const where = ["tenant_id = $tenant", "prompt_id = $promptId"];
    const params: Record<string, string | number> = { promptId };
    if (f.status) (where.push("status = $status"), (params.status = f.status));
    if (f.version !== undefined) (where.push("version = $version"), (params.version = f.version));
    const w = where.join(" AND ");
    const total = this.db.get<{ n: number }>(`SELECT count(*) AS n FROM prompt_runs WHERE ${w}`, params)!.n;
    const items = this.db
      .all<RunRow>(`SELECT * FROM prompt_runs WHERE ${w} ORDER BY created_at DESC, rowid DESC LIMIT $limit OFFSET $offset`, { ...params, limit: page.limit, offset: page.offset })
      .map(runOf);
    return { items, total };
  }
}
