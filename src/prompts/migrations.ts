import type { Migration } from "../storage/migrations";
import { searchTextOf } from "./search";

export const PROMPTS_MIGRATIONS: Migration[] = [
  {
    id: "0001_tables",
    legacyId: "0300_prompts_tables",
    up: `
      CREATE TABLE prompt_folders (
        id TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL,
        name TEXT NOT NULL,
        parent_id TEXT,
        created_by TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE INDEX prompt_folders_parent ON prompt_folders(tenant_id, parent_id);

      CREATE TABLE prompts (
        id TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL,
        name TEXT NOT NULL,
        slug TEXT NOT NULL,
        description TEXT NOT NULL DEFAULT '',
        template TEXT NOT NULL,
        variables TEXT NOT NULL,
        model TEXT,
        temperature REAL,
        max_tokens INTEGER,
        tags TEXT NOT NULL DEFAULT '[]',
        folder_id TEXT,
        status TEXT NOT NULL,
        current_version INTEGER NOT NULL,
        created_by TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE UNIQUE INDEX prompts_slug ON prompts(tenant_id, slug);
      CREATE INDEX prompts_folder ON prompts(tenant_id, folder_id);
      CREATE INDEX prompts_updated ON prompts(tenant_id, updated_at);

      CREATE TABLE prompt_versions (
        id TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL,
        prompt_id TEXT NOT NULL REFERENCES prompts(id) ON DELETE CASCADE,
        version INTEGER NOT NULL,
        template TEXT NOT NULL,
        variables TEXT NOT NULL,
        model TEXT,
        temperature REAL,
        max_tokens INTEGER,
        message TEXT,
        created_by TEXT NOT NULL,
        created_at TEXT NOT NULL
      );
      CREATE UNIQUE INDEX prompt_versions_num ON prompt_versions(tenant_id, prompt_id, version);

      CREATE TABLE prompt_runs (
        id TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL,
        prompt_id TEXT NOT NULL REFERENCES prompts(id) ON DELETE CASCADE,
        version INTEGER NOT NULL,
        status TEXT NOT NULL,
        model TEXT,
        variables TEXT NOT NULL,
        rendered_prompt TEXT NOT NULL,
        response TEXT,
        prompt_tokens INTEGER NOT NULL DEFAULT 0,
        completion_tokens INTEGER NOT NULL DEFAULT 0,
        cache_hit INTEGER NOT NULL DEFAULT 0,
        dry_run INTEGER NOT NULL DEFAULT 0,
        duration_ms INTEGER NOT NULL DEFAULT 0,
        error TEXT,
        created_by TEXT NOT NULL,
        created_at TEXT NOT NULL
      );
      CREATE INDEX prompt_runs_prompt ON prompt_runs(tenant_id, prompt_id, created_at);

      CREATE TABLE prompt_chains (
        id TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL,
        name TEXT NOT NULL,
        description TEXT NOT NULL DEFAULT '',
        steps TEXT NOT NULL,
        created_by TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE INDEX prompt_chains_tenant ON prompt_chains(tenant_id, created_at);
    `,
  },
  {
    // `search` is case-insensitive beyond ASCII (SQLite's LIKE folds only A-Z): match against a
    // lower-cased, NFC-normalised copy of name + description kept by the repository
    id: "0002_search_text",
    legacyId: "0301_prompts_search_text",
    up: (db) => {
      db.run("ALTER TABLE prompts ADD COLUMN search_text TEXT NOT NULL DEFAULT ''");
      const rows = db.query("SELECT id, name, description FROM prompts").all() as Array<{ id: string; name: string; description: string }>;
      const set = db.query("UPDATE prompts SET search_text = ? WHERE id = ?");
      for (const r of rows) set.run(searchTextOf(r.name, r.description), r.id);
    },
  },
];
