import type { Migration } from "../storage/migrations";

export const MCP_MIGRATIONS: Migration[] = [
  {
    id: "0001_tables",
    up: {
      sqlite: `
      CREATE TABLE mcp_servers (
        id TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL,
        name TEXT NOT NULL,
        description TEXT NOT NULL DEFAULT '',
        url TEXT NOT NULL,
        transport TEXT NOT NULL,
        auth_type TEXT NOT NULL,
        auth_config TEXT NOT NULL,
        status TEXT NOT NULL,
        health_p50_ms INTEGER,
        health_p99_ms INTEGER,
        health_samples TEXT NOT NULL DEFAULT '[]',
        consecutive_failures INTEGER NOT NULL DEFAULT 0,
        avg_latency_ms REAL,
        error_rate REAL NOT NULL DEFAULT 0,
        last_health_check TEXT,
        last_health_check_ms INTEGER,
        last_error TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE UNIQUE INDEX mcp_servers_name ON mcp_servers(tenant_id, name);
      CREATE INDEX mcp_servers_status ON mcp_servers(tenant_id, status);

      CREATE TABLE mcp_tools (
        id TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL,
        server_id TEXT NOT NULL REFERENCES mcp_servers(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        description TEXT NOT NULL DEFAULT '',
        input_schema TEXT NOT NULL,
        annotations TEXT,
        category TEXT NOT NULL,
        category_confidence REAL NOT NULL,
        category_manual INTEGER NOT NULL DEFAULT 0,
        cache_enabled INTEGER NOT NULL,
        cache_ttl_secs INTEGER NOT NULL,
        semantic_threshold REAL NOT NULL,
        cross_agent INTEGER NOT NULL,
        coalescing_window_ms INTEGER NOT NULL,
        cache_manual INTEGER NOT NULL DEFAULT 0,
        available INTEGER NOT NULL DEFAULT 1,
        last_discovered_at TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE UNIQUE INDEX mcp_tools_name ON mcp_tools(tenant_id, server_id, name);
      CREATE INDEX mcp_tools_category ON mcp_tools(tenant_id, category);

      CREATE TABLE mcp_entities (
        id TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL,
        name TEXT NOT NULL,
        description TEXT NOT NULL DEFAULT '',
        parent_id TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE UNIQUE INDEX mcp_entities_name ON mcp_entities(tenant_id, name);
      CREATE INDEX mcp_entities_parent ON mcp_entities(tenant_id, parent_id);

      CREATE TABLE mcp_tool_entities (
        tenant_id TEXT NOT NULL,
        tool_id TEXT NOT NULL REFERENCES mcp_tools(id) ON DELETE CASCADE,
        entity_id TEXT NOT NULL REFERENCES mcp_entities(id) ON DELETE CASCADE,
        param_name TEXT NOT NULL,
        operation TEXT NOT NULL,
        created_at TEXT NOT NULL,
        PRIMARY KEY (tenant_id, tool_id, entity_id)
      );
      CREATE INDEX mcp_tool_entities_entity ON mcp_tool_entities(tenant_id, entity_id);

      CREATE TABLE mcp_rules (
        id TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL,
        write_tool_id TEXT NOT NULL REFERENCES mcp_tools(id) ON DELETE CASCADE,
        invalidate_tool_id TEXT NOT NULL REFERENCES mcp_tools(id) ON DELETE CASCADE,
        enabled INTEGER NOT NULL DEFAULT 1,
        created_at TEXT NOT NULL
      );
      CREATE UNIQUE INDEX mcp_rules_pair ON mcp_rules(tenant_id, write_tool_id, invalidate_tool_id);
      CREATE INDEX mcp_rules_invalidate ON mcp_rules(tenant_id, invalidate_tool_id);

      CREATE TABLE mcp_cache_entries (
        vec_key INTEGER PRIMARY KEY AUTOINCREMENT,
        cache_key INTEGER NOT NULL,
        tenant_id TEXT NOT NULL,
        server_id TEXT NOT NULL,
        tool_id TEXT NOT NULL,
        agent_scope TEXT NOT NULL,
        args_json TEXT NOT NULL,
        struct_key TEXT NOT NULL,
        result_json TEXT NOT NULL,
        created_at_ms INTEGER NOT NULL,
        expires_at_ms INTEGER NOT NULL,
        hits INTEGER NOT NULL DEFAULT 0,
        last_hit_at_ms INTEGER,
        upstream_ms REAL NOT NULL,
        size_bytes INTEGER NOT NULL,
        embedder_id TEXT,
        vec BLOB
      );
      CREATE UNIQUE INDEX mcp_cache_key ON mcp_cache_entries(tenant_id, cache_key);
      CREATE INDEX mcp_cache_tool ON mcp_cache_entries(tenant_id, tool_id);
      CREATE INDEX mcp_cache_expiry ON mcp_cache_entries(tenant_id, expires_at_ms);

      CREATE TABLE mcp_cache_tags (
        tenant_id TEXT NOT NULL,
        cache_key INTEGER NOT NULL,
        entity_id TEXT NOT NULL,
        value TEXT
      );
      CREATE INDEX mcp_cache_tags_entity ON mcp_cache_tags(tenant_id, entity_id, value);
      CREATE INDEX mcp_cache_tags_key ON mcp_cache_tags(tenant_id, cache_key);

      CREATE TABLE mcp_calls (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        tenant_id TEXT NOT NULL,
        at_ms INTEGER NOT NULL,
        server_id TEXT NOT NULL,
        tool_id TEXT NOT NULL,
        tool_name TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        cache_status TEXT NOT NULL,
        tier TEXT,
        cache_key INTEGER,
        latency_ms REAL NOT NULL,
        upstream_ms REAL,
        error TEXT
      );
      CREATE INDEX mcp_calls_time ON mcp_calls(tenant_id, at_ms);
      CREATE INDEX mcp_calls_key ON mcp_calls(tenant_id, cache_key);
      CREATE INDEX mcp_calls_tool ON mcp_calls(tenant_id, tool_id);

      CREATE TABLE mcp_connections (
        id TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL,
        server_id TEXT NOT NULL REFERENCES mcp_servers(id) ON DELETE CASCADE,
        client_id TEXT NOT NULL,
        state TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        connected_at TEXT,
        disconnected_at TEXT,
        last_heartbeat_at TEXT,
        last_activity_ms INTEGER NOT NULL,
        state_changed_at TEXT NOT NULL,
        errors INTEGER NOT NULL DEFAULT 0,
        state_changes INTEGER NOT NULL DEFAULT 0
      );
      CREATE INDEX mcp_connections_server ON mcp_connections(tenant_id, server_id, state);
      CREATE INDEX mcp_connections_state ON mcp_connections(state, last_activity_ms);
    `,
      // the same tables on PostgreSQL: epoch ms, counters and 64-bit keys BIGINT, REAL as DOUBLE PRECISION,
      // generated keys as identity columns, vectors BYTEA; a tag is one per (entry, entity): its key
      postgres: `
      CREATE TABLE mcp_servers (
        id TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL,
        name TEXT NOT NULL,
        description TEXT NOT NULL DEFAULT '',
        url TEXT NOT NULL,
        transport TEXT NOT NULL,
        auth_type TEXT NOT NULL,
        auth_config TEXT NOT NULL,
        status TEXT NOT NULL,
        health_p50_ms INTEGER,
        health_p99_ms INTEGER,
        health_samples TEXT NOT NULL DEFAULT '[]',
        consecutive_failures INTEGER NOT NULL DEFAULT 0,
        avg_latency_ms DOUBLE PRECISION,
        error_rate DOUBLE PRECISION NOT NULL DEFAULT 0,
        last_health_check TEXT,
        last_health_check_ms BIGINT,
        last_error TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE UNIQUE INDEX mcp_servers_name ON mcp_servers(tenant_id, name);
      CREATE INDEX mcp_servers_status ON mcp_servers(tenant_id, status);

      CREATE TABLE mcp_tools (
        id TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL,
        server_id TEXT NOT NULL REFERENCES mcp_servers(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        description TEXT NOT NULL DEFAULT '',
        input_schema TEXT NOT NULL,
        annotations TEXT,
        category TEXT NOT NULL,
        category_confidence DOUBLE PRECISION NOT NULL,
        category_manual INTEGER NOT NULL DEFAULT 0,
        cache_enabled INTEGER NOT NULL,
        cache_ttl_secs INTEGER NOT NULL,
        semantic_threshold DOUBLE PRECISION NOT NULL,
        cross_agent INTEGER NOT NULL,
        coalescing_window_ms INTEGER NOT NULL,
        cache_manual INTEGER NOT NULL DEFAULT 0,
        available INTEGER NOT NULL DEFAULT 1,
        last_discovered_at TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE UNIQUE INDEX mcp_tools_name ON mcp_tools(tenant_id, server_id, name);
      CREATE INDEX mcp_tools_category ON mcp_tools(tenant_id, category);

      CREATE TABLE mcp_entities (
        id TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL,
        name TEXT NOT NULL,
        description TEXT NOT NULL DEFAULT '',
        parent_id TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE UNIQUE INDEX mcp_entities_name ON mcp_entities(tenant_id, name);
      CREATE INDEX mcp_entities_parent ON mcp_entities(tenant_id, parent_id);

      CREATE TABLE mcp_tool_entities (
        tenant_id TEXT NOT NULL,
        tool_id TEXT NOT NULL REFERENCES mcp_tools(id) ON DELETE CASCADE,
        entity_id TEXT NOT NULL REFERENCES mcp_entities(id) ON DELETE CASCADE,
        param_name TEXT NOT NULL,
        operation TEXT NOT NULL,
        created_at TEXT NOT NULL,
        PRIMARY KEY (tenant_id, tool_id, entity_id)
      );
      CREATE INDEX mcp_tool_entities_entity ON mcp_tool_entities(tenant_id, entity_id);

      CREATE TABLE mcp_rules (
        id TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL,
        write_tool_id TEXT NOT NULL REFERENCES mcp_tools(id) ON DELETE CASCADE,
        invalidate_tool_id TEXT NOT NULL REFERENCES mcp_tools(id) ON DELETE CASCADE,
        enabled INTEGER NOT NULL DEFAULT 1,
        created_at TEXT NOT NULL
      );
      CREATE UNIQUE INDEX mcp_rules_pair ON mcp_rules(tenant_id, write_tool_id, invalidate_tool_id);
      CREATE INDEX mcp_rules_invalidate ON mcp_rules(tenant_id, invalidate_tool_id);

      CREATE TABLE mcp_cache_entries (
        vec_key BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        cache_key BIGINT NOT NULL,
        tenant_id TEXT NOT NULL,
        server_id TEXT NOT NULL,
        tool_id TEXT NOT NULL,
        agent_scope TEXT NOT NULL,
        args_json TEXT NOT NULL,
        struct_key TEXT NOT NULL,
        result_json TEXT NOT NULL,
        created_at_ms BIGINT NOT NULL,
        expires_at_ms BIGINT NOT NULL,
        hits BIGINT NOT NULL DEFAULT 0,
        last_hit_at_ms BIGINT,
        upstream_ms DOUBLE PRECISION NOT NULL,
        size_bytes BIGINT NOT NULL,
        embedder_id TEXT,
        vec BYTEA
      );
      CREATE UNIQUE INDEX mcp_cache_key ON mcp_cache_entries(tenant_id, cache_key);
      CREATE INDEX mcp_cache_tool ON mcp_cache_entries(tenant_id, tool_id);
      CREATE INDEX mcp_cache_expiry ON mcp_cache_entries(tenant_id, expires_at_ms);

      CREATE TABLE mcp_cache_tags (
        tenant_id TEXT NOT NULL,
        cache_key BIGINT NOT NULL,
        entity_id TEXT NOT NULL,
        value TEXT,
        PRIMARY KEY (tenant_id, cache_key, entity_id)
      );
      CREATE INDEX mcp_cache_tags_entity ON mcp_cache_tags(tenant_id, entity_id, value);
      CREATE INDEX mcp_cache_tags_key ON mcp_cache_tags(tenant_id, cache_key);

      CREATE TABLE mcp_calls (
        id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        tenant_id TEXT NOT NULL,
        at_ms BIGINT NOT NULL,
        server_id TEXT NOT NULL,
        tool_id TEXT NOT NULL,
        tool_name TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        cache_status TEXT NOT NULL,
        tier TEXT,
        cache_key BIGINT,
        latency_ms DOUBLE PRECISION NOT NULL,
        upstream_ms DOUBLE PRECISION,
        error TEXT
      );
      CREATE INDEX mcp_calls_time ON mcp_calls(tenant_id, at_ms);
      CREATE INDEX mcp_calls_key ON mcp_calls(tenant_id, cache_key);
      CREATE INDEX mcp_calls_tool ON mcp_calls(tenant_id, tool_id);

      CREATE TABLE mcp_connections (
        id TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL,
        server_id TEXT NOT NULL REFERENCES mcp_servers(id) ON DELETE CASCADE,
        client_id TEXT NOT NULL,
        state TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        connected_at TEXT,
        disconnected_at TEXT,
        last_heartbeat_at TEXT,
        last_activity_ms BIGINT NOT NULL,
        state_changed_at TEXT NOT NULL,
        errors INTEGER NOT NULL DEFAULT 0,
        state_changes INTEGER NOT NULL DEFAULT 0
      );
      CREATE INDEX mcp_connections_server ON mcp_connections(tenant_id, server_id, state);
      CREATE INDEX mcp_connections_state ON mcp_connections(state, last_activity_ms);
    `,
    },
  },
  {
    // the cache entries a READ mapping cannot have tagged: those stored (vec_key, monotonic) before it
    // existed or last changed; mappings older than this migration count every entry then present
    id: "0002_mapping_cache_seq",
    up: {
      sqlite: `
      ALTER TABLE mcp_tool_entities ADD COLUMN cache_seq INTEGER NOT NULL DEFAULT 0;
      UPDATE mcp_tool_entities SET cache_seq = (SELECT COALESCE(MAX(vec_key), 0) FROM mcp_cache_entries);
      -- a state-changing tool without rules or mappings drops its server's entries (toolcache, afterExecution)
      CREATE INDEX mcp_cache_server ON mcp_cache_entries(tenant_id, server_id);
    `,
      // vec_key is a BIGINT there
      postgres: `
      ALTER TABLE mcp_tool_entities ADD COLUMN cache_seq BIGINT NOT NULL DEFAULT 0;
      UPDATE mcp_tool_entities SET cache_seq = (SELECT COALESCE(MAX(vec_key), 0) FROM mcp_cache_entries);
      CREATE INDEX mcp_cache_server ON mcp_cache_entries(tenant_id, server_id);
    `,
    },
  },
];
