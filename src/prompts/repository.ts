/**
 * Storage of the prompts domain behind narrow interfaces (PromptStore, FolderStore, ChainStore),
 * implemented over TenantDb so every statement is scoped to the caller's tenant. A Postgres
 * backend would implement the same interfaces; the services never see SQL.
 */
import type { Db } from "../storage/db";
import { TenantDb, type ForTenant } from "../storage/scoped";
import type { Page } from "../core/pagination";
import { searchKey, searchTextOf } from "./search";
import type { Chain, Folder, Prompt, PromptStatus, PromptVersion, Run, RunStatus } from "./types";

export interface Listed<T> {
  items: T[];
  total: number;
}

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

export interface PromptStore {
  tx<T>(fn: () => T): T;
  insertPrompt(p: Prompt): void;
  updatePrompt(p: Prompt): void;
  getPrompt(id: string): Prompt | undefined;
  /** slugs equal to `base` or of the form `base-N` */
  slugsLike(base: string): string[];
  listPrompts(f: PromptFilter, page: Page): Listed<Prompt>;
  /** removes the prompt with its versions and runs */
  deletePrompt(id: string): boolean;
  insertVersion(v: PromptVersion): void;
  getVersion(promptId: string, version: number): PromptVersion | undefined;
  listVersions(promptId: string, page: Page): Listed<PromptVersion>;
  /** false (nothing stored) when the prompt no longer exists, e.g. deleted during the model call */
  insertRun(r: Run): boolean;
  getRun(promptId: string, runId: string): Run | undefined;
  listRuns(promptId: string, f: RunFilter, page: Page): Listed<Run>;
}

export interface FolderStore {
  tx<T>(fn: () => T): T;
  insert(f: Folder): void;
  update(f: Folder): void;
  get(id: string): Folder | undefined;
  listChildren(parentId: string | null, page: Page): Listed<Folder>;
  /** ids from the folder up to its root, starting with the folder itself */
  ancestry(id: string): string[];
  contents(id: string): { folders: number; prompts: number };
  delete(id: string): boolean;
}

export interface ChainStore {
  tx<T>(fn: () => T): T;
  insert(c: Chain): void;
  update(c: Chain): void;
  get(id: string): Chain | undefined;
  list(page: Page): Listed<Chain>;
  delete(id: string): boolean;
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

export class SqlPromptStore implements PromptStore {
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

// ---- folders ----

interface FolderRow {
  id: string;
  name: string;
  parent_id: string | null;
  created_by: string;
  created_at: string;
  updated_at: string;
}

const folderOf = (r: FolderRow): Folder => ({
  id: r.id,
  name: r.name,
  parentId: r.parent_id,
  createdBy: r.created_by,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export class SqlFolderStore implements FolderStore {
  constructor(private readonly db: TenantDb) {}

  tx<T>(fn: () => T): T {
    return this.db.tx(fn);
  }

  insert(f: Folder) {
    this.db.run(
      `INSERT INTO prompt_folders (id, tenant_id, name, parent_id, created_by, created_at, updated_at)
       VALUES ($id, $tenant, $name, $parent_id, $created_by, $created_at, $updated_at)`,
      { id: f.id, name: f.name, parent_id: f.parentId, created_by: f.createdBy, created_at: f.createdAt, updated_at: f.updatedAt },
    );
  }

  update(f: Folder) {
    this.db.run("UPDATE prompt_folders SET name = $name, parent_id = $parent_id, updated_at = $updated_at WHERE tenant_id = $tenant AND id = $id", {
      id: f.id,
      name: f.name,
      parent_id: f.parentId,
      updated_at: f.updatedAt,
    });
  }

  get(id: string) {
    const r = this.db.get<FolderRow>("SELECT * FROM prompt_folders WHERE tenant_id = $tenant AND id = $id", { id });
    return r && folderOf(r);
  }

  listChildren(parentId: string | null, page: Page) {
    const cond = parentId === null ? "parent_id IS NULL" : "parent_id = $parent";
    const params: Record<string, string> = parentId === null ? {} : { parent: parentId };
    const total = this.db.get<{ n: number }>(`SELECT count(*) AS n FROM prompt_folders WHERE tenant_id = $tenant AND ${cond}`, params)!.n;
    const items = this.db
      .all<FolderRow>(`SELECT * FROM prompt_folders WHERE tenant_id = $tenant AND ${cond} ORDER BY name COLLATE NOCASE, id LIMIT $limit OFFSET $offset`, {
        ...params,
        limit: page.limit,
        offset: page.offset,
      })
      .map(folderOf);
    return { items, total };
  }

  ancestry(id: string) {
    return this.db
      .all<{ id: string }>(
        `WITH RECURSIVE up(id, parent_id, depth) AS (
           SELECT id, parent_id, 0 FROM prompt_folders WHERE tenant_id = $tenant AND id = $id
           UNION ALL
           SELECT f.id, f.parent_id, up.depth + 1 FROM prompt_folders f JOIN up ON f.id = up.parent_id
           WHERE f.tenant_id = $tenant AND up.depth < 10000
         ) SELECT id FROM up ORDER BY depth`,
        { id },
      )
      .map((r) => r.id);
  }

  contents(id: string) {
    const folders = this.db.get<{ n: number }>("SELECT count(*) AS n FROM prompt_folders WHERE tenant_id = $tenant AND parent_id = $id", { id })!.n;
    const prompts = this.db.get<{ n: number }>("SELECT count(*) AS n FROM prompts WHERE tenant_id = $tenant AND folder_id = $id", { id })!.n;
    return { folders, prompts };
  }

  delete(id: string) {
    return this.db.run("DELETE FROM prompt_folders WHERE tenant_id = $tenant AND id = $id", { id }).changes > 0;
  }
}

// ---- chains ----

interface ChainRow {
  id: string;
  tenant_id: string;
  name: string;
  description: string;
  steps: string;
  created_by: string;
  created_at: string;
  updated_at: string;
}

const chainOf = (r: ChainRow): Chain => ({
  id: r.id,
  name: r.name,
  description: r.description,
  steps: json(r.steps),
  workspaceId: r.tenant_id,
  createdBy: r.created_by,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export class SqlChainStore implements ChainStore {
  constructor(private readonly db: TenantDb) {}

  tx<T>(fn: () => T): T {
    return this.db.tx(fn);
  }

  insert(c: Chain) {
    this.db.run(
      `INSERT INTO prompt_chains (id, tenant_id, name, description, steps, created_by, created_at, updated_at)
       VALUES ($id, $tenant, $name, $description, $steps, $created_by, $created_at, $updated_at)`,
      { id: c.id, name: c.name, description: c.description, steps: JSON.stringify(c.steps), created_by: c.createdBy, created_at: c.createdAt, updated_at: c.updatedAt },
    );
  }

  update(c: Chain) {
    this.db.run("UPDATE prompt_chains SET name = $name, description = $description, steps = $steps, updated_at = $updated_at WHERE tenant_id = $tenant AND id = $id", {
      id: c.id,
      name: c.name,
      description: c.description,
      steps: JSON.stringify(c.steps),
      updated_at: c.updatedAt,
    });
  }

  get(id: string) {
    const r = this.db.get<ChainRow>("SELECT * FROM prompt_chains WHERE tenant_id = $tenant AND id = $id", { id });
    return r && chainOf(r);
  }

  list(page: Page) {
    const total = this.db.get<{ n: number }>("SELECT count(*) AS n FROM prompt_chains WHERE tenant_id = $tenant")!.n;
    const items = this.db
      .all<ChainRow>("SELECT * FROM prompt_chains WHERE tenant_id = $tenant ORDER BY created_at DESC, id LIMIT $limit OFFSET $offset", { limit: page.limit, offset: page.offset })
      .map(chainOf);
    return { items, total };
  }

  delete(id: string) {
    return this.db.run("DELETE FROM prompt_chains WHERE tenant_id = $tenant AND id = $id", { id }).changes > 0;
  }
}

export interface PromptStores {
  prompts: ForTenant<PromptStore>;
  folders: ForTenant<FolderStore>;
  chains: ForTenant<ChainStore>;
}

export function sqlStores(db: Db): PromptStores {
  return {
    prompts: (tenantId) => new SqlPromptStore(new TenantDb(db, tenantId)),
    folders: (tenantId) => new SqlFolderStore(new TenantDb(db, tenantId)),
    chains: (tenantId) => new SqlChainStore(new TenantDb(db, tenantId)),
  };
}
