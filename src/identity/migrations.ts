import type { Migration } from "../storage/migrations";

export const IDENTITY_MIGRATIONS: Migration[] = [
  {
    id: "0001_users_roles",
    up: `
      CREATE TABLE users (
        id TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL,
        email TEXT NOT NULL,
        email_lower TEXT NOT NULL,
        name TEXT,
        external_id TEXT,
        identity_provider TEXT,
        metadata TEXT NOT NULL DEFAULT '{}',
        status TEXT NOT NULL,
        search_text TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        deleted_at TEXT
      );
      CREATE UNIQUE INDEX users_email ON users(tenant_id, email_lower) WHERE deleted_at IS NULL;
      CREATE INDEX users_tenant_created ON users(tenant_id, created_at);
      CREATE INDEX users_external ON users(tenant_id, external_id);

      CREATE TABLE roles (
        id TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL,
        name TEXT NOT NULL,
        name_lower TEXT NOT NULL,
        description TEXT NOT NULL DEFAULT '',
        permissions TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE UNIQUE INDEX roles_name ON roles(tenant_id, name_lower);

      CREATE TABLE role_assignments (
        id TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL,
        user_id TEXT NOT NULL,
        role_id TEXT NOT NULL,
        scope TEXT NOT NULL,
        expires_at TEXT,
        assigned_by TEXT,
        created_at TEXT NOT NULL
      );
      CREATE UNIQUE INDEX role_assignments_unique ON role_assignments(tenant_id, user_id, role_id, scope);
      CREATE INDEX role_assignments_role ON role_assignments(tenant_id, role_id);
    `,
  },
  {
    id: "0002_teams",
    up: `
      CREATE TABLE teams (
        id TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL,
        name TEXT NOT NULL,
        name_lower TEXT NOT NULL,
        description TEXT NOT NULL DEFAULT '',
        parent_team_id TEXT,
        max_budget_cents INTEGER,
        budget_period TEXT NOT NULL,
        external_id TEXT,
        created_by TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        deleted_at TEXT
      );
      CREATE UNIQUE INDEX teams_name ON teams(tenant_id, name_lower) WHERE deleted_at IS NULL;
      CREATE INDEX teams_parent ON teams(tenant_id, parent_team_id);
      CREATE INDEX teams_external ON teams(tenant_id, external_id);

      CREATE TABLE team_members (
        tenant_id TEXT NOT NULL,
        team_id TEXT NOT NULL,
        user_id TEXT NOT NULL,
        created_at TEXT NOT NULL,
        PRIMARY KEY (tenant_id, team_id, user_id)
      );
      CREATE INDEX team_members_user ON team_members(tenant_id, user_id);

      -- virtual keys (api_keys of the keys domain) assigned to a team: at most one team per key
      CREATE TABLE team_keys (
        tenant_id TEXT NOT NULL,
        key_id TEXT NOT NULL,
        team_id TEXT NOT NULL,
        assigned_at TEXT NOT NULL,
        PRIMARY KEY (tenant_id, key_id)
      );
      CREATE INDEX team_keys_team ON team_keys(tenant_id, team_id);
    `,
  },
  {
    id: "0003_invitations",
    up: `
      CREATE TABLE invitations (
        id TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL,
        email TEXT NOT NULL,
        email_lower TEXT NOT NULL,
        role_id TEXT,
        message TEXT,
        status TEXT NOT NULL,
        token_version INTEGER NOT NULL DEFAULT 1,
        invited_by TEXT,
        expires_at TEXT NOT NULL,
        email_status TEXT NOT NULL,
        email_error TEXT,
        sent_at TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        accepted_at TEXT,
        accepted_user_id TEXT,
        revoked_at TEXT
      );
      CREATE INDEX invitations_tenant_created ON invitations(tenant_id, created_at);
      CREATE INDEX invitations_email ON invitations(tenant_id, email_lower, status);
    `,
  },
  {
    id: "0004_sso",
    up: `
      CREATE TABLE sso_connections (
        id TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL,
        name TEXT NOT NULL,
        name_lower TEXT NOT NULL,
        protocol TEXT NOT NULL,
        -- oidcConfig without clientSecret / samlConfig, as JSON
        oidc_config TEXT,
        -- AES-256-GCM: base64url(iv).base64url(ciphertext+tag), bound to the connection id
        client_secret_enc TEXT,
        saml_config TEXT,
        jit_provisioning INTEGER NOT NULL DEFAULT 0,
        default_role TEXT NOT NULL,
        status TEXT NOT NULL,
        status_reason TEXT,
        last_test TEXT,
        last_tested_at TEXT,
        created_by TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        deleted_at TEXT
      );
      CREATE UNIQUE INDEX sso_connections_name ON sso_connections(tenant_id, name_lower) WHERE deleted_at IS NULL;
      CREATE INDEX sso_connections_created ON sso_connections(tenant_id, created_at);

      CREATE TABLE sso_domains (
        id TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL,
        connection_id TEXT NOT NULL,
        domain TEXT NOT NULL,
        verification_method TEXT NOT NULL,
        verification_token TEXT NOT NULL,
        status TEXT NOT NULL,
        is_primary INTEGER NOT NULL DEFAULT 0,
        verified_at TEXT,
        last_checked_at TEXT,
        last_error TEXT,
        created_at TEXT NOT NULL
      );
      CREATE UNIQUE INDEX sso_domains_per_connection ON sso_domains(tenant_id, connection_id, domain);
      -- a verified domain routes sign-ins: it belongs to one connection of one workspace
      CREATE UNIQUE INDEX sso_domains_verified ON sso_domains(domain) WHERE status = 'verified';
      CREATE INDEX sso_domains_domain ON sso_domains(domain);

      -- a sign-in between the redirect to the identity provider and its answer (state = id)
      CREATE TABLE sso_logins (
        id TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL,
        connection_id TEXT NOT NULL,
        protocol TEXT NOT NULL,
        nonce TEXT,
        code_verifier TEXT,
        request_id TEXT,
        redirect_uri TEXT NOT NULL,
        created_at TEXT NOT NULL,
        expires_at TEXT NOT NULL
      );
      CREATE INDEX sso_logins_expiry ON sso_logins(expires_at);

      -- SAML assertion ids seen, kept until the assertion's own expiry (replay refused)
      CREATE TABLE sso_assertions (
        tenant_id TEXT NOT NULL,
        assertion_id TEXT NOT NULL,
        connection_id TEXT NOT NULL,
        expires_at TEXT NOT NULL,
        PRIMARY KEY (tenant_id, assertion_id)
      );
    `,
  },
  {
    id: "0005_scim",
    up: `
      CREATE TABLE scim_tokens (
        id TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL,
        name TEXT NOT NULL,
        prefix TEXT NOT NULL,
        hash TEXT NOT NULL UNIQUE,
        scopes TEXT NOT NULL,
        revoked_at TEXT,
        expires_at TEXT,
        last_used_at TEXT,
        created_by TEXT,
        created_at TEXT NOT NULL
      );
      CREATE INDEX scim_tokens_created ON scim_tokens(tenant_id, created_at);

      CREATE TABLE scim_activities (
        id TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL,
        token_id TEXT,
        operation TEXT NOT NULL,
        resource_type TEXT NOT NULL,
        resource_id TEXT,
        status TEXT NOT NULL,
        error_message TEXT,
        details TEXT NOT NULL DEFAULT '{}',
        created_at TEXT NOT NULL
      );
      CREATE INDEX scim_activities_created ON scim_activities(tenant_id, created_at);
      CREATE INDEX scim_activities_token ON scim_activities(tenant_id, token_id);
    `,
  },
  {
    id: "0006_passwords",
    up: `
      CREATE TABLE user_passwords (
        tenant_id TEXT NOT NULL,
        user_id TEXT NOT NULL,
        hash TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (tenant_id, user_id)
      );

      CREATE TABLE password_resets (
        id TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL,
        user_id TEXT NOT NULL,
        token_hash TEXT NOT NULL UNIQUE,
        expires_at TEXT NOT NULL,
        used_at TEXT,
        created_at TEXT NOT NULL
      );
      CREATE INDEX password_resets_user ON password_resets(tenant_id, user_id);

      CREATE TABLE identity_settings (
        tenant_id TEXT PRIMARY KEY,
        password_login INTEGER NOT NULL,
        updated_at TEXT NOT NULL
      );
    `,
  },
];
