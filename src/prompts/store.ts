/**
 * Prompts, their versions and runs, over the async tenant-bound handle (every statement scoped to
 * the caller's tenant), one SQL text on SQLite and PostgreSQL: what differs (the JSON array of
 * tags) comes from the storage's dialect, built into the texts once per dialect. The services
 * never see SQL.
 */
import type { AsyncTenantDb } from "../storage/async";
import type { Dialect } from "../storage/dialect";
import { likePattern } from "../storage/dialect";
import { StorageConstraintError } from "../storage/errors";
import type { Page } from "../core/pagination";
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

/** The texts that differ by dialect, built once per dialect. */
interface Texts {
  hasTag: string;
}
const textsByDialect = new Map<Dialect, Texts>();
const textsOf = (d: Dialect): Texts => {
  let t = textsByDialect.get(d);
  if (!t) textsByDialect.set(d, (t = { hasTag: `EXISTS (SELECT 1 FROM ${d.jsonEach("prompts.tags")} WHERE value = $tag)` }));
  return t;
};

// INSERT … SELECT (not VALUES) for the guard; PostgreSQL types the select list's parameters from the casts
const INSERT_RUN = `INSERT INTO prompt_runs (id, tenant_id, prompt_id, version, status, model, variables, rendered_prompt, response, prompt_tokens, completion_tokens, cache_hit, dry_run, duration_ms, error, created_by, created_at, seq)
  SELECT $id, $tenant, $prompt_id, CAST($version AS INTEGER), $status, $model, $variables, $rendered_prompt, $response, CAST($prompt_tokens AS INTEGER),
    CAST($completion_tokens AS INTEGER), CAST($cache_hit AS INTEGER), CAST($dry_run AS INTEGER), CAST($duration_ms AS INTEGER), $error, $created_by, $created_at, CAST($seq AS BIGINT)
  WHERE EXISTS (SELECT 1 FROM prompts WHERE tenant_id = $tenant AND id = $prompt_id)`;

let lastSeq = 0;
/**
 * A run's `seq`: microseconds since the epoch, strictly increasing in this process, so runs of one
 * prompt created in the same millisecond list in insertion order (runs of one millisecond on two
 * replicas are concurrent: any order is right). Computed here rather than as MAX(seq) + 1 in the
 * INSERT: a subquery on the table being inserted into made each run's INSERT ~4x slower on SQLite.
 */
const nextSeq = () => (lastSeq = Math.max(lastSeq + 1, Math.floor((performance.timeOrigin + performance.now()) * 1000)));

export class PromptStore {
  private readonly texts: Texts;
  constructor(
    private readonly db: AsyncTenantDb,
    dialect: Dialect,
  ) {
    this.texts = textsOf(dialect);
  }

  /** fn in one transaction: it touches only the database and may run more than once (PostgreSQL) */
  tx<T>(fn: () => Promise<T>): Promise<T> {
    return this.db.tx(fn);
  }

  async insertPrompt(p: Prompt) {
    await this.db.run(
      `INSERT INTO prompts (id, tenant_id, name, slug, description, template, variables, model, temperature, max_tokens, tags, folder_id, status, current_version, created_by, created_at, updated_at, search_text)
       VALUES ($id, $tenant, $name, $slug, $description, $template, $variables, $model, $temperature, $max_tokens, $tags, $folder_id, $status, $current_version, $created_by, $created_at, $updated_at, $search_text)`,
      promptParams(p),
    );
  }

  async updatePrompt(p: Prompt) {
    const { created_by, created_at, slug, ...params } = promptParams(p);
    await this.db.run(
      `UPDATE prompts SET name = $name, description = $description, template = $template, variables = $variables, model = $model,
         temperature = $temperature, max_tokens = $max_tokens, tags = $tags, folder_id = $folder_id, status = $status,
         current_version = $current_version, updated_at = $updated_at, search_text = $search_text
       WHERE tenant_id = $tenant AND id = $id`,
      params,
    );
  }

  async getPrompt(id: string) {
    const r = await this.db.get<PromptRow>("SELECT * FROM prompts WHERE tenant_id = $tenant AND id = $id", { id });
    return r && promptOf(r);
  }

  /** slugs are lower-case ASCII (slugify), so a case-sensitive LIKE is the same on both dialects */
  async slugsLike(base: string) {
    const rows = await this.db.all<{ slug: string }>("SELECT slug FROM prompts WHERE tenant_id = $tenant AND (slug = $base OR slug LIKE $pattern ESCAPE '\\')", {
      base,
      pattern: likePattern(base + "-", "prefix"),
    });
    return rows.map((r) => r.slug);
  }

  async listPrompts(f: PromptFilter, page: Page) {
    const where = ["tenant_id = $tenant"];
    const params: Record<string, string | number> = {};
    if (f.status) (where.push("status = $status"), (params.status = f.status));
    if (f.folderId) (where.push("folder_id = $folder"), (params.folder = f.folderId));
    if (f.tag !== undefined) (where.push(this.texts.hasTag), (params.tag = f.tag));
    if (f.search) {
      // search_text and the key are both folded (search.ts): a plain LIKE, the same on both dialects
      where.push("search_text LIKE $search ESCAPE '\\'");
      params.search = likePattern(searchKey(f.search));
    }
    const w = where.join(" AND ");
    const total = (await this.db.get<{ n: number }>(`SELECT count(*) AS n FROM prompts WHERE ${w}`, params))!.n;
    const rows = await this.db.all<PromptRow>(`SELECT * FROM prompts WHERE ${w} ORDER BY updated_at DESC, id LIMIT $limit OFFSET $offset`, { ...params, limit: page.limit, offset: page.offset });
    return { items: rows.map(promptOf), total };
  }

  deletePrompt(id: string): Promise<boolean> {
    return this.db.tx(async () => {
      await this.db.run("DELETE FROM prompt_runs WHERE tenant_id = $tenant AND prompt_id = $id", { id });
      await this.db.run("DELETE FROM prompt_versions WHERE tenant_id = $tenant AND prompt_id = $id", { id });
      return (await this.db.run("DELETE FROM prompts WHERE tenant_id = $tenant AND id = $id", { id })).changes > 0;
    });
  }

  async insertVersion(v: PromptVersion) {
    await this.db.run(
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

  async getVersion(promptId: string, version: number) {
    const r = await this.db.get<VersionRow>("SELECT * FROM prompt_versions WHERE tenant_id = $tenant AND prompt_id = $promptId AND version = $version", {
      promptId,
      version,
    });
    return r && versionOf(r);
  }

  async listVersions(promptId: string, page: Page) {
    const total = (await this.db.get<{ n: number }>("SELECT count(*) AS n FROM prompt_versions WHERE tenant_id = $tenant AND prompt_id = $promptId", { promptId }))!.n;
    const rows = await this.db.all<VersionRow>("SELECT * FROM prompt_versions WHERE tenant_id = $tenant AND prompt_id = $promptId ORDER BY version DESC LIMIT $limit OFFSET $offset", {
        promptId,
        limit: page.limit,
      offset: page.offset,
    });
    return { items: rows.map(versionOf), total };
  }

  /**
   * Records a run unless its prompt is gone (deleted while its model call was in flight): false
   * then. `seq` (nextSeq) orders runs of one prompt created in the same millisecond.
   */
  async insertRun(r: Run): Promise<boolean> {
    const params = {
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
      seq: nextSeq(),
    };
    try {
      return (await this.db.run(INSERT_RUN, params)).changes > 0;
    } catch (e) {
      // PostgreSQL: the prompt was deleted between the EXISTS check and the foreign key's
      if (e instanceof StorageConstraintError && e.kind === "foreign_key") return false;
      throw e;
    }
  }

  async getRun(promptId: string, runId: string) {
    const r = await this.db.get<RunRow>("SELECT * FROM prompt_runs WHERE tenant_id = $tenant AND prompt_id = $promptId AND id = $runId", { promptId, runId });
    return r && runOf(r);
  }

  async listRuns(promptId: string, f: RunFilter, page: Page) {
    const where = ["tenant_id = $tenant", "prompt_id = $promptId"];
    const params: Record<string, string | number> = { promptId };
    if (f.status) (where.push("status = $status"), (params.status = f.status));
    if (f.version !== undefined) (where.push("version = $version"), (params.version = f.version));
    const w = where.join(" AND ");
    const total = (await this.db.get<{ n: number }>(`SELECT count(*) AS n FROM prompt_runs WHERE ${w}`, params))!.n;
    const rows = await this.db.all<RunRow>(`SELECT * FROM prompt_runs WHERE ${w} ORDER BY created_at DESC, seq DESC, id DESC LIMIT $limit OFFSET $offset`, {
      ...params,
      limit: page.limit,
      offset: page.offset,
    });
    return { items: rows.map(runOf), total };
  }
}
