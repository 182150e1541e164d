import type { Migration, MigrationSql } from "../storage/migrations";
import { searchTextOf } from "./search";

/**
 * 0001 as SQLite has always run it (never edit an applied migration). PostgreSQL runs the same
 * DDL with DOUBLE PRECISION for REAL (PostgreSQL's REAL is 4 bytes: a temperature of 0.7 would
 * read back as 0.699999988); every other type means the same on both.
 */
const TABLES_0001 = `
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
    `;

/** search_text for every prompt (0002): rows written before the column existed */
async function backfillSearchText(sql: MigrationSql) {
  const rows = await sql.all<{ id: string; name: string; description: string }>("SELECT id, name, description FROM prompts");
  for (const r of rows) await sql.run("UPDATE prompts SET search_text = $text WHERE id = $id", { text: searchTextOf(r.name, r.description), id: r.id });
}

export const PROMPTS_MIGRATIONS: Migration[] = [
  {
    id: "0001_tables",
    legacyId: "0300_prompts_tables",
    up: { sqlite: TABLES_0001, postgres: TABLES_0001.replace(/\bREAL\b/g, "DOUBLE PRECISION") },
  },
  {
    // `search` is case-insensitive beyond ASCII (SQLite's LIKE folds only A-Z): match against a
    // lower-cased, NFC-normalised copy of name + description kept by the repository
    id: "0002_search_text",
    legacyId: "0301_prompts_search_text",
    up: {
      sqlite: (db) => {
        db.run("ALTER TABLE prompts ADD COLUMN search_text TEXT NOT NULL DEFAULT ''");
        const rows = db.query("SELECT id, name, description FROM prompts").all() as Array<{ id: string; name: string; description: string }>;
        const set = db.query("UPDATE prompts SET search_text = ? WHERE id = ?");
        for (const r of rows) set.run(searchTextOf(r.name, r.description), r.id);
      },
      postgres: async (sql) => {
        await sql.run("ALTER TABLE prompts ADD COLUMN search_text TEXT NOT NULL DEFAULT ''");
        await backfillSearchText(sql);
      },
    },
  },
  {
    // runs of one prompt listed newest first: created_at, then insertion order for runs of the
    // same millisecond. That tie-break was SQLite's implicit rowid; `seq` is an explicit column
    // both dialects have, written by the store (store.ts nextSeq). Existing runs keep their order.
    id: "0003_run_seq",
    up: {
      sqlite: `
        ALTER TABLE prompt_runs ADD COLUMN seq INTEGER NOT NULL DEFAULT 0;
        UPDATE prompt_runs SET seq = rowid;
      `,
      postgres: "ALTER TABLE prompt_runs ADD COLUMN seq BIGINT NOT NULL DEFAULT 0",
    },
  },
];
