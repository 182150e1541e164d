/**
 * A SQLite database with data in every domain, written by the real gateway on SQLite (startServer
 * + the domains' services, and one proxied chat completion through a fake upstream for the cache,
 * usage and request-outcome rows): what `svc storage copy` is tested on (test/cli/storage-copy.test.ts).
 */
import { join } from "node:path";
import { loadConfig } from "../../src/config";
import { startServer } from "../../src/server";
import { Logger } from "../../src/core/log";
import { merged } from "../../src/core/objects";
import { closedPort, startFakeUpstream } from "../fake-upstream/server";
import { cacheKeyOf, canonical } from "../../src/mcp/toolcache/key";
import { TEST_JWT_SECRET } from "../helpers/gateway";

export const TENANT = "tenant-copy";

export interface Filled {
  /** the SQLite file */
  path: string;
  /** an API key of TENANT (WorkspaceAdmin) */
  apiKey: string;
  keyId: string;
  promptId: string;
}

/**
 * the tables `storage copy` must find non-empty in the fixture: one or more rows in each. Empty:
 * password_resets (a reset needs an SMTP server), sso_logins and sso_assertions (a sign-in through
 * an identity provider), settings (no code writes it any more) — copied all the same, their
 * counts checked (0 = 0).
 */
export const FILLED_TABLES = [
  "api_keys",
  "rate_limit_tiers",
  "prompts",
  "prompt_versions",
  "prompt_runs",
  "prompt_folders",
  "prompt_chains",
  "cache_entries",
  "cache_settings",
  "usage_records",
  "usage_rollup_minute",
  "usage_rollup_hour",
  "request_outcome_minute",
  "request_outcome_hour",
  "users",
  "user_passwords",
  "identity_settings",
  "teams",
  "team_members",
  "team_keys",
  "roles",
  "role_assignments",
  "invitations",
  "sso_connections",
  "sso_domains",
  "scim_tokens",
  "scim_activities",
  "mcp_servers",
  "mcp_tools",
  "mcp_entities",
  "mcp_tool_entities",
  "mcp_rules",
  "mcp_calls",
  "mcp_cache_entries",
  "mcp_cache_tags",
  "mcp_connections",
  "memory_projects",
  "memory_branches",
  "memory_milestones",
  "memory_milestones_fts",
  "memory_logs",
  "memory_metadata",
  "memory_sessions",
  "memory_contributors",
  "memory_knowledge",
  "memory_knowledge_fts",
  "memory_sources",
  "memory_documents",
  "memory_documents_fts",
];

const env = (dir: string) => ({ SVC_STORAGE__PATH: join(dir, "svc.db"), SVC_AUTH__JWT_SECRET: TEST_JWT_SECRET });

/** Start the real gateway on dir/svc.db, write something into every domain, stop it (its buffers flushed). */
export async function fillEveryDomain(dir: string): Promise<Filled> {
  const fake = await startFakeUpstream();
  const down = `http://127.0.0.1:${await closedPort()}`;
  const config = loadConfig(
    env(dir),
    merged(
      {
        server: { host: "127.0.0.1", port: 0, request_log: false },
        rate_limits: { enabled: false },
        providers: { openai: { base_url: fake.url, api_key: "sk-up-openai", max_retries: 0 }, anthropic: { base_url: down, api_key: "sk-up-anthropic", max_retries: 0 } },
        identity: { passwords: { argon2_memory_kib: 8_192, argon2_time_cost: 1 } },
        mcp: { health_interval_secs: 0 },
        outbound: { allow_private: true },
      },
      {},
    ),
  );
  const running = await startServer(config, { logger: new Logger("error", () => {}) });
  const app = running.ctx;
  const t = TENANT;
  try {
    // keys (and the keys domain's settings row: its pepper/epoch), a tier
    const key = await app.identity.keys.create(t, { name: "copied admin", permissions: ["WorkspaceAdmin"] });
    await (app.limiter as unknown as { setTier(t: string, tier: string, by: string): Promise<unknown> }).setTier(t, "pro", "admin");

    // the proxy: a cache miss stored (entry with its vector), a hit, usage records and their rollups
    const chat = () =>
      fetch(`${running.url}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${key.key}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "How many legs does a spider have?" }] }),
      });
    const miss = await chat();
    if (miss.status !== 200) throw new Error(`proxy answered ${miss.status}: ${await miss.text()}`);
    await miss.text();
    // an upstream that cannot be reached: a 5xx counted in the request outcomes
    const failed = await fetch(`${running.url}/v1/messages`, {
      method: "POST",
      headers: { authorization: `Bearer ${key.key}`, "content-type": "application/json", "anthropic-version": "2023-06-01" },
      body: JSON.stringify({ model: "claude-test-1", max_tokens: 10, messages: [{ role: "user", content: "hi" }] }),
    });
    if (failed.status < 500) throw new Error(`expected a 5xx from an unreachable upstream, got ${failed.status}: ${await failed.text()}`);
    await failed.text();
    await app.cache.setTenantSettings(t, { decisionThreshold: 0.6 });

    // prompts: folder, prompt with a second version, a (dry) run, a chain
    const who = { tenantId: t, sub: "user:admin" };
    const folder = await app.prompts.folders.create(who, { name: "Support" });
    const prompt = await app.prompts.prompts.create(who, { name: "Greeting", template: "Hi {{name}}", model: "gpt-4o-mini", folderId: folder.id, tags: ["copy"] });
    await app.prompts.prompts.addVersion(who, prompt.id, { template: "Hello {{name}}" });
    await app.prompts.runs.execute(who, prompt.id, { variables: { name: "Ann" }, dryRun: true });
    await app.prompts.chains.create(who, { name: "two steps", steps: [{ modelId: "gpt-4o-mini" }, { modelId: "gpt-4o-mini", transform: "template", template: "Q: {{input}}" }] });

    // identity: users, role + assignment, team with a member and a key, invitation (accepted: a password), reset, SSO, SCIM
    const id = app.identity;
    const ann = await id.users.create(t, { email: "ann@example.com", name: "Ann" });
    const role = await id.roles.create(t, { name: "Ops", permissions: ["ViewLogs"] });
    await id.roles.assign(t, ann.id, { roleId: role.id });
    const team = await id.teams.create(t, { name: "platform", maxBudgetCents: 10_000 });
    await id.teams.addMembers(t, team.id, [ann.id]);
    await id.keys.create(t, { name: "team key", teamId: team.id });
    const inv = await id.invitations.create(t, { emails: ["bob@example.com", "cy@example.com"], roleId: role.id }, "admin", "http://svc.test");
    const token = inv.invitations[0]!.link!.split("token=")[1]!;
    await id.invitations.accept(token, { name: "Bob", password: "a long enough passphrase 42" });
    await id.passwords.setPasswordLogin(t, true);
    const sso = await id.sso.create(t, { name: "Okta", protocol: "oidc", oidcConfig: { issuerUrl: "https://idp.example.com", clientId: "c", clientSecret: "s" } });
    await id.sso.addDomain(t, sso.id, { domain: "copy.example.com" });
    // the SAML service provider's key pair, generated beside the database (the copy carries it)
    await id.signin.spMetadata("http://svc.test", true);
    const scim = await id.scimTokens.create(t, { name: "Entra" });
    await id.scimActivities.record(t, { tokenId: scim.token.id, operation: "create", resourceType: "user", resourceId: null, status: "success", errorMessage: null, details: {} });

    // MCP: server, tools, entities + mappings + a generated rule, a cached result (tags), a call logged, a connection
    const m = app.mcp;
    const server = await m.registry.register(t, { name: "issues", url: "http://127.0.0.1:9/mcp" });
    const { tools } = await m.registry.applyDiscovery(t, server.id, [
      { name: "get_issue", inputSchema: { type: "object", properties: { issue_id: { type: "string" } } }, annotations: { readOnlyHint: true } },
      { name: "update_issue", inputSchema: { type: "object", properties: { issue_id: { type: "string" } } }, annotations: { destructiveHint: true } },
    ]);
    const read = await m.registry.tool(t, tools.find((x) => x.name === "get_issue")!.id);
    const write = await m.registry.tool(t, tools.find((x) => x.name === "update_issue")!.id);
    const issue = await m.entities.create(t, { name: "issue" });
    await m.entities.map(t, { toolId: read.id, entityId: issue.id, paramName: "issue_id", operation: "READ" });
    await m.entities.map(t, { toolId: write.id, entityId: issue.id, paramName: "issue_id", operation: "WRITE" });
    await m.entities.generate(t);
    const args = { issue_id: "7" };
    const c = canonical(args);
    const cacheKey = cacheKeyOf(t, server.id, read.name, "", c);
    await m.cache.store(t, read, { key: cacheKey, args, canonicalArgs: c, agentScope: "", structKey: c, result: { content: [{ type: "text", text: "issue 7" }] }, upstreamMs: 5, epoch: m.cache.epoch(t) });
    m.callLog.record(t, { atMs: Date.now(), serverId: server.id, toolId: read.id, toolName: read.name, agentId: "agent", cacheStatus: "MISS", tier: null, cacheKey, latencyMs: 5, upstreamMs: 5, error: null }, null);
    await m.connections.create(t, { serverId: server.id, clientId: "ide" });

    // Memory: project (main branch), branch, milestones, log, segment, session, knowledge, a source with a document
    const mem = app.memory.memory;
    await mem.createProject(t, { projectId: "p", name: "Project", roadmap: "ship it" });
    await mem.createBranch(t, "p", { branchName: "feat", purpose: "a feature", agentId: "agent-2" });
    await mem.storeMilestone(t, "p", { branchPurpose: "ship", cumulativeProgress: "retry_budget doubled", thisContribution: "retry_budget doubled", agentId: "agent-1" });
    await mem.storeMilestone(t, "p", { branchName: "feat", branchPurpose: "feature", cumulativeProgress: "Café menu added", thisContribution: "Café menu added", agentId: "agent-2", agentType: "claude-code" });
    await mem.appendLog(t, "p", { agentId: "agent-1", phase: "thought", content: "consider the cache" });
    await mem.putSegment(t, "p", "notes", { a: 1 });
    await app.memory.contributors.upsertContributor(t, { contributorId: "ann", displayName: "Ann", agentIds: ["agent-1"] });
    await mem.recordSession(t, "p", { agentId: "a", agentType: "claude-code", sessionId: "s1", toolCallsTotal: 10, toolCallsRead: 4, sessionDurationSecs: 60, milestonesRecalled: 1, compactionCount: 0, startedAt: "2026-01-01T00:00:00Z", endedAt: "2026-01-01T00:01:00Z" });
    await mem.promote(t, "p", { cacheKey: "k", reuseScore: 0.8, summary: "rotate_keys monthly", l2Collection: "l2" });
    const store = mem.store(t);
    const at = new Date().toISOString();
    await store.insertSource({ sourceId: "gh", tenantId: t, projectId: "p", sourceType: "github", config: { owner: "o", repo: "r" }, syncCursor: "", lastSyncedAt: null, enabled: true, createdAt: at, updatedAt: at, lastError: null, itemsSynced: 0 });
    const [v] = await app.embedder.embed(["Issue one body"]);
    await store.upsertDocument("p", "gh", { externalId: "issue-1", kind: "issue", title: "Issue one", body: "Issue one body with quux_token", url: null, author: null, updatedAt: at }, "d1", app.embedder.id, v!, at);
    return { path: join(dir, "svc.db"), apiKey: key.key, keyId: key.id, promptId: prompt.id };
  } finally {
    await running.stop();
    await fake.stop();
  }
}
