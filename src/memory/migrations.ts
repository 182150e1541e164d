/**
 * The Memory API's tables. Every row carries tenant_id; project ids are per tenant. Searchable
 * items (milestones, knowledge, synced documents) keep their f32 embedding (`vec`, the source of
 * truth the in-memory USearch indexes are rebuilt from) and a row in an FTS5 table whose rowid is
 * the item's integer key (BM25 lexical matching); its `scope` column holds a tenant token and a
 * project token (store.ts scopeOf) so FTS5 narrows a match to the searched projects itself.
 *
 * PostgreSQL gets the same tables in portable types (postgresOf): epoch-free counters and the
 * signed 64-bit content hash as BIGINT (PostgreSQL's INTEGER is 32-bit), vectors as BYTEA, the
 * reuse score as DOUBLE PRECISION, generated keys as identity columns, and each FTS5 table as the
 * dialect's full-text table (a 'simple' tsvector of `body`, GIN-indexed; `scope` stored beside it
 * with a btree index for the scope's statistics — lexical.ts).
 */
import { postgresDialect } from "../storage/dialect";
import type { Migration } from "../storage/migrations";

const TABLES_0001 = `
      CREATE TABLE memory_projects (
        tenant_id TEXT NOT NULL,
        project_id TEXT NOT NULL,
        name TEXT NOT NULL,
        roadmap TEXT NOT NULL,
        milestone_count INTEGER NOT NULL DEFAULT 0,
        next_seq INTEGER NOT NULL DEFAULT 1,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (tenant_id, project_id)
      );
      CREATE INDEX memory_projects_created ON memory_projects(tenant_id, created_at);

      CREATE TABLE memory_branches (
        tenant_id TEXT NOT NULL,
        project_id TEXT NOT NULL,
        branch_name TEXT NOT NULL,
        parent_branch TEXT,
        purpose TEXT NOT NULL,
        status TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        abandon_reason TEXT,
        merged_into TEXT,
        merge_milestone_id TEXT,
        next_log_seq INTEGER NOT NULL DEFAULT 1,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (tenant_id, project_id, branch_name)
      );

      CREATE TABLE memory_milestones (
        key INTEGER PRIMARY KEY AUTOINCREMENT,
        milestone_id TEXT NOT NULL UNIQUE,
        tenant_id TEXT NOT NULL,
        project_id TEXT NOT NULL,
        branch_name TEXT NOT NULL,
        branch_purpose TEXT NOT NULL,
        cumulative_progress TEXT NOT NULL,
        this_contribution TEXT NOT NULL,
        content_hash INTEGER NOT NULL,
        sequence_number INTEGER NOT NULL,
        agent_id TEXT NOT NULL,
        agent_type TEXT NOT NULL,
        merged_from TEXT,
        embedder_id TEXT NOT NULL,
        vec BLOB NOT NULL,
        created_at TEXT NOT NULL
      );
      CREATE UNIQUE INDEX memory_milestones_hash ON memory_milestones(tenant_id, project_id, content_hash);
      CREATE UNIQUE INDEX memory_milestones_seq ON memory_milestones(tenant_id, project_id, sequence_number);
      CREATE INDEX memory_milestones_branch ON memory_milestones(tenant_id, project_id, branch_name, sequence_number);
      CREATE INDEX memory_milestones_agent ON memory_milestones(tenant_id, agent_id, created_at);
      CREATE VIRTUAL TABLE memory_milestones_fts USING fts5(body, scope, tokenize = "unicode61 tokenchars '_'");

      CREATE TABLE memory_logs (
        key INTEGER PRIMARY KEY AUTOINCREMENT,
        entry_id TEXT NOT NULL UNIQUE,
        tenant_id TEXT NOT NULL,
        project_id TEXT NOT NULL,
        branch_name TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        phase TEXT NOT NULL,
        content TEXT NOT NULL,
        sequence_number INTEGER NOT NULL,
        created_at TEXT NOT NULL
      );
      CREATE UNIQUE INDEX memory_logs_seq ON memory_logs(tenant_id, project_id, branch_name, sequence_number);

      CREATE TABLE memory_metadata (
        tenant_id TEXT NOT NULL,
        project_id TEXT NOT NULL,
        segment TEXT NOT NULL,
        data TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (tenant_id, project_id, segment)
      );

      CREATE TABLE memory_sessions (
        key INTEGER PRIMARY KEY AUTOINCREMENT,
        tenant_id TEXT NOT NULL,
        project_id TEXT NOT NULL,
        session_id TEXT NOT NULL,
        branch_name TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        agent_type TEXT NOT NULL,
        milestones_recalled INTEGER NOT NULL,
        compaction_count INTEGER NOT NULL,
        tool_calls_total INTEGER NOT NULL,
        tool_calls_read INTEGER NOT NULL,
        tool_calls_search INTEGER NOT NULL,
        tool_calls_edit INTEGER NOT NULL,
        tool_calls_execute INTEGER NOT NULL,
        tool_calls_agent INTEGER NOT NULL,
        session_duration_secs INTEGER NOT NULL,
        started_at TEXT NOT NULL,
        ended_at TEXT NOT NULL,
        created_at TEXT NOT NULL
      );
      CREATE UNIQUE INDEX memory_sessions_id ON memory_sessions(tenant_id, project_id, session_id);
      CREATE INDEX memory_sessions_ended ON memory_sessions(tenant_id, project_id, ended_at);

      CREATE TABLE memory_knowledge (
        key INTEGER PRIMARY KEY AUTOINCREMENT,
        knowledge_id TEXT NOT NULL UNIQUE,
        tenant_id TEXT NOT NULL,
        project_id TEXT NOT NULL,
        cache_key TEXT NOT NULL,
        reuse_score REAL NOT NULL,
        summary TEXT NOT NULL,
        l2_collection TEXT NOT NULL,
        blob_key TEXT,
        content_hash INTEGER NOT NULL,
        embedder_id TEXT NOT NULL,
        vec BLOB NOT NULL,
        created_at TEXT NOT NULL
      );
      CREATE UNIQUE INDEX memory_knowledge_hash ON memory_knowledge(tenant_id, project_id, content_hash);
      CREATE INDEX memory_knowledge_created ON memory_knowledge(tenant_id, project_id, created_at);
      CREATE VIRTUAL TABLE memory_knowledge_fts USING fts5(body, scope, tokenize = "unicode61 tokenchars '_'");

      CREATE TABLE memory_contributors (
        tenant_id TEXT NOT NULL,
        contributor_id TEXT NOT NULL,
        display_name TEXT NOT NULL,
        agent_ids TEXT NOT NULL,
        role TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (tenant_id, contributor_id)
      );

      CREATE TABLE memory_sources (
        tenant_id TEXT NOT NULL,
        source_id TEXT NOT NULL,
        project_id TEXT NOT NULL,
        source_type TEXT NOT NULL,
        config TEXT NOT NULL,
        sync_cursor TEXT NOT NULL DEFAULT '',
        last_synced_at TEXT,
        enabled INTEGER NOT NULL DEFAULT 1,
        last_error TEXT,
        items_synced INTEGER NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (tenant_id, source_id)
      );
      CREATE INDEX memory_sources_project ON memory_sources(tenant_id, project_id);

      CREATE TABLE memory_documents (
        key INTEGER PRIMARY KEY AUTOINCREMENT,
        document_id TEXT NOT NULL UNIQUE,
        tenant_id TEXT NOT NULL,
        project_id TEXT NOT NULL,
        source_id TEXT NOT NULL,
        external_id TEXT NOT NULL,
        kind TEXT NOT NULL,
        title TEXT NOT NULL,
        body TEXT NOT NULL,
        url TEXT,
        author TEXT,
        updated_at TEXT NOT NULL,
        embedder_id TEXT NOT NULL,
        vec BLOB NOT NULL,
        created_at TEXT NOT NULL
      );
      CREATE UNIQUE INDEX memory_documents_ext ON memory_documents(tenant_id, source_id, external_id);
      CREATE INDEX memory_documents_project ON memory_documents(tenant_id, project_id);
      CREATE VIRTUAL TABLE memory_documents_fts USING fts5(body, scope, tokenize = "unicode61 tokenchars '_'");
    `;

/** The PostgreSQL text of a SQLite DDL of this file (types above; the SQLite text itself never changes). */
export function postgresOf(sqlite: string): string {
  const d = postgresDialect;
  return sqlite
    .replace(/CREATE VIRTUAL TABLE (\w+) USING fts5\(body, scope, tokenize = "unicode61 tokenchars '_'"\);/g, (_m, table: string) => `${d.ftsTable({ table, ranked: ["body"], unranked: ["scope"] })};\nCREATE INDEX ${table}_scope ON ${table} (scope text_pattern_ops);`)
    .replace(/INTEGER PRIMARY KEY AUTOINCREMENT/g, d.autoId)
    .replace(/\bINTEGER\b/g, "BIGINT")
    .replace(/\bREAL\b/g, "DOUBLE PRECISION")
    .replace(/\bBLOB\b/g, d.blob);
}

export const MEMORY_MIGRATIONS: Migration[] = [{ id: "0001_tables", up: { sqlite: TABLES_0001, postgres: postgresOf(TABLES_0001) } }];
