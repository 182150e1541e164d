/**
 * The access matrix of docs/security.md as a table: for every route in it, a credential of the
 * tenant that lacks the route's permission gets 403 in the route's envelope (holding every other
 * permission), and one holding just that permission does not; routes open to any credential of
 * the tenant answer a token without permissions. Every route of the product's own assets
 * (prompts, folders, chains, MCP, tool cache, memory) must be in the table: a new route without a
 * row fails here, so the matrix and the route declarations (`perm:`) cannot drift apart.
 * Issue 22 item 7.
 */
import { describe, expect, test, beforeAll, afterAll } from "bun:test";
import { startGateway, type TestGateway } from "./helpers/gateway";

type Need = "any" | "ViewMetrics" | "ManageConfig" | "ManageKeys" | "ViewKeys" | "ViewLogs" | "WorkspaceAdmin";
const ALL: Exclude<Need, "any">[] = ["ViewMetrics", "ManageConfig", "ManageKeys", "ViewKeys", "ViewLogs", "WorkspaceAdmin"];
/** permissions that imply another (besides WorkspaceAdmin, which implies all): core/permissions.ts */
const IMPLIED_BY: Partial<Record<Need, Need[]>> = { ViewKeys: ["ManageKeys"] };

/** METHOD path need — the matrix of docs/security.md, "Access matrix" */
const MATRIX = `
GET /api/v1/prompts any
POST /api/v1/prompts ManageConfig
GET /api/v1/prompts/:id any
PUT /api/v1/prompts/:id ManageConfig
DELETE /api/v1/prompts/:id ManageConfig
POST /api/v1/prompts/:id/duplicate ManageConfig
GET /api/v1/prompts/:id/versions any
POST /api/v1/prompts/:id/versions ManageConfig
GET /api/v1/prompts/:id/versions/:version any
GET /api/v1/prompts/:id/diff any
POST /api/v1/prompts/:id/rollback ManageConfig
POST /api/v1/prompts/:id/execute any
POST /api/v1/prompts/:id/test any
GET /api/v1/prompts/:id/runs ViewLogs
GET /api/v1/prompts/:id/runs/:runId ViewLogs

GET /api/v1/folders any
POST /api/v1/folders ManageConfig
GET /api/v1/folders/:id any
PUT /api/v1/folders/:id ManageConfig
DELETE /api/v1/folders/:id ManageConfig

GET /api/v1/chains any
POST /api/v1/chains ManageConfig
GET /api/v1/chains/:id any
PUT /api/v1/chains/:id ManageConfig
DELETE /api/v1/chains/:id ManageConfig
POST /api/v1/chains/:id/execute any

GET /api/v1/mcp/servers any
POST /api/v1/mcp/servers ManageConfig
GET /api/v1/mcp/servers/:id any
DELETE /api/v1/mcp/servers/:id ManageConfig
GET /api/v1/mcp/servers/:id/health any
POST /api/v1/mcp/servers/:id/discover ManageConfig
POST /api/v1/mcp/servers/:id/disable ManageConfig
POST /api/v1/mcp/servers/:id/enable ManageConfig
GET /api/v1/mcp/servers/:id/connection-stats ViewMetrics
GET /api/v1/mcp/tools any
GET /api/v1/mcp/tools/:id any
PATCH /api/v1/mcp/tools/:id/config ManageConfig
GET /api/v1/mcp/tools/:id/entities any
POST /api/v1/mcp/tools/:id/call any
GET /api/v1/mcp/entities any
POST /api/v1/mcp/entities ManageConfig
GET /api/v1/mcp/entities/:id any
PATCH /api/v1/mcp/entities/:id ManageConfig
DELETE /api/v1/mcp/entities/:id ManageConfig
POST /api/v1/mcp/tool-entities ManageConfig
DELETE /api/v1/mcp/tool-entities/:tool_id/:entity_id ManageConfig
GET /api/v1/mcp/rules any
POST /api/v1/mcp/rules ManageConfig
POST /api/v1/mcp/rules/generate ManageConfig
PATCH /api/v1/mcp/rules/:id ManageConfig
DELETE /api/v1/mcp/rules/:id ManageConfig
GET /api/v1/mcp/analytics ViewMetrics
GET /api/v1/mcp/config/export any
POST /api/v1/mcp/config/import ManageConfig
GET /api/v1/mcp/connections any
POST /api/v1/mcp/connections ManageConfig
GET /api/v1/mcp/connections/:id any
PATCH /api/v1/mcp/connections/:id/state ManageConfig
POST /api/v1/mcp/connections/:id/heartbeat any
GET /mcp any
POST /mcp any
DELETE /mcp any

POST /api/v1/tool-cache/search any
POST /api/v1/tool-cache/invalidate ManageConfig
GET /api/v1/tool-cache/metrics ViewMetrics
POST /api/v1/tool-cache/stats ViewMetrics
GET /api/v1/tool-cache/:cache_key any

POST /api/v1/memory/projects any
GET /api/v1/memory/projects any
GET /api/v1/memory/projects/:id any
DELETE /api/v1/memory/projects/:id ManageConfig
PUT /api/v1/memory/projects/:id/roadmap any
POST /api/v1/memory/projects/:id/store any
GET /api/v1/memory/projects/:id/recall any
PUT /api/v1/memory/projects/:id/metadata/:segment any
POST /api/v1/memory/projects/:id/log any
POST /api/v1/memory/projects/:id/branches any
GET /api/v1/memory/projects/:id/branches any
GET /api/v1/memory/projects/:id/branches/:name any
POST /api/v1/memory/projects/:id/branches/:name/abandon any
POST /api/v1/memory/projects/:id/merge any
POST /api/v1/memory/projects/:id/search any
POST /api/v1/memory/projects/:id/metrics any
GET /api/v1/memory/projects/:id/metrics/summary any
POST /api/v1/memory/projects/:id/promote any
POST /api/v1/memory/search any
POST /api/v1/memory/contributors ManageConfig
GET /api/v1/memory/contributors any
GET /api/v1/memory/contributors/:id any
DELETE /api/v1/memory/contributors/:id ManageConfig
GET /api/v1/memory/contributors/:id/activity any
POST /api/v1/memory/sources ManageConfig
GET /api/v1/memory/sources any
GET /api/v1/memory/sources/:id any
PUT /api/v1/memory/sources/:id ManageConfig
DELETE /api/v1/memory/sources/:id ManageConfig
POST /api/v1/memory/sources/:id/sync ManageConfig
GET /api/v1/memory/sources/:id/status any
POST /api/v1/memory/intelligence/query any
POST /api/v1/memory/intelligence/action any

POST /api/v1/query any
GET /api/v1/usage ViewMetrics
GET /api/v1/cache/stats ViewMetrics
GET /api/v1/cache/entries ViewMetrics
DELETE /api/v1/cache/entries/:id ManageConfig
GET /api/v1/cache/settings ViewMetrics
PUT /api/v1/cache/settings ManageConfig
DELETE /api/v1/cache ManageConfig

GET /api/v1/rate-limits ViewMetrics
GET /api/v1/rate-limits/tiers ViewMetrics
GET /api/v1/rate-limits/:tenant_id ViewMetrics
PUT /api/v1/rate-limits/:tenant_id ManageConfig
DELETE /api/v1/rate-limits/:tenant_id ManageConfig

GET /api/v1/users WorkspaceAdmin
POST /api/v1/users WorkspaceAdmin
GET /api/v1/users/:id WorkspaceAdmin
PUT /api/v1/users/:id WorkspaceAdmin
DELETE /api/v1/users/:id WorkspaceAdmin
GET /api/v1/users/:id/roles ManageKeys
POST /api/v1/users/:id/roles ManageKeys
DELETE /api/v1/users/:id/roles/:role_id ManageKeys
GET /api/v1/teams WorkspaceAdmin
POST /api/v1/teams WorkspaceAdmin
GET /api/v1/teams/:id WorkspaceAdmin
PUT /api/v1/teams/:id WorkspaceAdmin
DELETE /api/v1/teams/:id WorkspaceAdmin
GET /api/v1/teams/:id/keys WorkspaceAdmin
GET /api/v1/teams/:id/spend WorkspaceAdmin
GET /api/v1/teams/:id/members WorkspaceAdmin
POST /api/v1/teams/:id/members WorkspaceAdmin
PUT /api/v1/teams/:id/members WorkspaceAdmin
DELETE /api/v1/teams/:id/members/:user_id WorkspaceAdmin
GET /api/v1/roles ManageKeys
POST /api/v1/roles ManageKeys
GET /api/v1/roles/:id ManageKeys
PATCH /api/v1/roles/:id ManageKeys
DELETE /api/v1/roles/:id ManageKeys
GET /api/v1/invitations WorkspaceAdmin
POST /api/v1/invitations WorkspaceAdmin
GET /api/v1/invitations/:id WorkspaceAdmin
POST /api/v1/invitations/:id/resend WorkspaceAdmin
DELETE /api/v1/invitations/:id WorkspaceAdmin
GET /api/v1/permissions/tree WorkspaceAdmin
GET /api/v1/permissions/check WorkspaceAdmin
GET /api/v1/virtual-keys ViewKeys
POST /api/v1/virtual-keys ManageKeys
GET /api/v1/virtual-keys/:id ViewKeys
PUT /api/v1/virtual-keys/:id/team ManageKeys
DELETE /api/v1/virtual-keys/:id ManageKeys
GET /api/v1/virtual-keys/:id/analytics ViewKeys
GET /api/v1/sso/connections WorkspaceAdmin
POST /api/v1/sso/connections WorkspaceAdmin
GET /api/v1/sso/connections/:id WorkspaceAdmin
PUT /api/v1/sso/connections/:id WorkspaceAdmin
DELETE /api/v1/sso/connections/:id WorkspaceAdmin
POST /api/v1/sso/connections/:id/test WorkspaceAdmin
POST /api/v1/sso/connections/:id/activate WorkspaceAdmin
POST /api/v1/sso/connections/:id/deactivate WorkspaceAdmin
POST /api/v1/sso/connections/:id/domains WorkspaceAdmin
PUT /api/v1/sso/connections/:id/domains/:domain_id/verify WorkspaceAdmin
POST /api/v1/sso/connections/:id/domains/:domain_id/set-primary WorkspaceAdmin
DELETE /api/v1/sso/connections/:id/domains/:domain_id WorkspaceAdmin
GET /api/v1/sso/sp-metadata WorkspaceAdmin
GET /api/v1/scim/tokens WorkspaceAdmin
POST /api/v1/scim/tokens WorkspaceAdmin
GET /api/v1/scim/tokens/:id WorkspaceAdmin
POST /api/v1/scim/tokens/:id/revoke WorkspaceAdmin
DELETE /api/v1/scim/tokens/:id WorkspaceAdmin
GET /api/v1/scim/activities WorkspaceAdmin
GET /api/v1/scim/statistics WorkspaceAdmin
`
  .trim()
  .split("\n")
  .filter((l) => l.trim())
  .map((l) => {
    const [method, path, need] = l.trim().split(" ") as [string, string, Need];
    return { method, path, need };
  });

/** the WebSocket streams (upgrade requests through the same front door) */
const SOCKETS: Array<{ path: string; need: Need }> = [
  { path: "/api/v1/mcp/stream", need: "ViewLogs" },
  { path: "/api/v1/mcp/connections/events", need: "any" },
];

/** Every route under these prefixes must have a row: the product's own assets. */
const ASSET_PREFIXES = ["/api/v1/prompts", "/api/v1/folders", "/api/v1/chains", "/api/v1/mcp", "/api/v1/tool-cache", "/api/v1/memory", "/mcp"];

const TENANT = "matrix-t";
const UUID = "00000000-0000-4000-8000-000000000000";
const concrete = (path: string) =>
  path.replace(/:(\w+)/g, (_, name: string) =>
    name === "tenant_id" ? TENANT : name === "version" ? "1" : name === "cache_key" ? "12345" : name === "name" ? "main" : name === "segment" ? "notes" : UUID,
  );

/** the envelope of a 403 on a path (docs/architecture.md: doc2 for MCP, doc3 for identity, doc1 otherwise) */
function expect403(path: string, status: number, body: any) {
  expect(status).toBe(403);
  if (path.startsWith("/api/v1/mcp") || path.startsWith("/api/v1/tool-cache") || path === "/mcp") expect(body).toEqual({ type: "permission_error", message: expect.any(String) });
  else if (/^\/api\/v1\/(users|teams|roles|invitations|permissions|virtual-keys|sso|scim)\b/.test(path)) expect(body).toEqual({ error: { type: "authorization_error", message: expect.any(String) } });
  else expect(body).toEqual({ error: { type: "authorization_error", message: expect.any(String) } });
}

let gw: TestGateway;
const tokens = new Map<string, string>();
/** a token holding exactly these permissions (cached per set) */
async function tokenWith(perms: string[]) {
  const k = perms.join(",");
  if (!tokens.has(k)) tokens.set(k, await gw.token(TENANT, perms, "matrix"));
  return tokens.get(k)!;
}
/** every permission except `need` and those implying it */
const lacking = (need: Exclude<Need, "any">) => ALL.filter((p) => p !== need && p !== "WorkspaceAdmin" && !(IMPLIED_BY[need] ?? []).includes(p));

async function send(method: string, path: string, token: string) {
  const hasBody = method === "POST" || method === "PUT" || method === "PATCH";
  const r = await gw.api(concrete(path), { method, token, ...(hasBody ? { json: {} } : {}), headers: path === "/mcp" ? { accept: "application/json, text/event-stream" } : {} });
  const text = await r.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {}
  return { status: r.status, body };
}

beforeAll(async () => {
  gw = await startGateway();
});
afterAll(() => gw.stop());

describe("access matrix (docs/security.md)", () => {
  test("every route of the product's assets has a row, and every row is a route", () => {
    const routes = gw.ctx.kernel
      .routeList()
      .filter((r) => r.method !== "HEAD" && ASSET_PREFIXES.some((p) => r.path === p || r.path.startsWith(p + "/")))
      .map((r) => `${r.method} ${r.path}`);
    const rows = MATRIX.filter((r) => ASSET_PREFIXES.some((p) => r.path === p || r.path.startsWith(p + "/"))).map((r) => `${r.method} ${r.path}`);
    expect([...new Set(routes)].sort()).toEqual([...rows].sort());
    // the rows of other areas exist too (a typo would test nothing)
    const all = new Set(gw.ctx.kernel.routeList().map((r) => `${r.method} ${r.path}`));
    expect(MATRIX.filter((r) => !all.has(`${r.method} ${r.path}`)).map((r) => `${r.method} ${r.path}`)).toEqual([]);
  });

  for (const row of MATRIX)
    test(`${row.method} ${row.path}: ${row.need === "any" ? "any credential of the tenant" : row.need}`, async () => {
      if (row.need === "any") {
        const r = await send(row.method, row.path, await tokenWith([]));
        expect({ status: r.status, body: r.body }).not.toMatchObject({ status: 403 });
        expect(r.status).not.toBe(401);
        expect(r.status).toBeLessThan(500);
        return;
      }
      const refused = await send(row.method, row.path, await tokenWith(lacking(row.need)));
      expect403(row.path, refused.status, refused.body);
      expect((refused.body as any).message ?? (refused.body as any).error?.message).toContain(row.need);
      const allowed = await send(row.method, row.path, await tokenWith([row.need]));
      expect({ status: allowed.status, body: allowed.body }).not.toMatchObject({ status: 403 });
      expect(allowed.status).not.toBe(401);
      expect(allowed.status).toBeLessThan(500);
    });

  test("the probe's API key with only ViewMetrics: cannot register an MCP server, delete or publish a prompt; an editor's key can", async () => {
    const viewer = (await gw.ctx.apiKeys.create(TENANT, "dashboard", ["ViewMetrics"])).key;
    const editor = (await gw.ctx.apiKeys.create(TENANT, "editor", ["ManageConfig"])).key;
    const prompt = await gw.api("/api/v1/prompts", { method: "POST", token: editor, json: { name: "kept", template: "Hello {{name}}" } });
    expect(prompt.status).toBe(201);
    const id = ((await prompt.json()) as { id: string }).id;
    const server = await gw.api("/api/v1/mcp/servers", { method: "POST", token: viewer, json: { name: "sneaky", url: "https://93.184.216.34/mcp" } });
    expect403("/api/v1/mcp/servers", server.status, await server.json());
    const publish = await gw.api(`/api/v1/prompts/${id}`, { method: "PUT", token: viewer, json: { status: "PUBLISHED" } });
    expect403("/api/v1/prompts", publish.status, await publish.json());
    const del = await gw.api(`/api/v1/prompts/${id}`, { method: "DELETE", token: viewer });
    expect403("/api/v1/prompts", del.status, await del.json());
    // the prompt is as it was, and the viewer still reads it
    const read = await gw.api(`/api/v1/prompts/${id}`, { token: viewer });
    expect(read.status).toBe(200);
    expect(((await read.json()) as { status: string }).status).toBe("DRAFT");
    expect((await gw.api(`/api/v1/prompts/${id}`, { method: "PUT", token: editor, json: { status: "PUBLISHED" } })).status).toBe(200);
    expect((await gw.api(`/api/v1/prompts/${id}`, { method: "DELETE", token: editor })).status).toBe(200);
  });

  const UPGRADE = { upgrade: "websocket", connection: "Upgrade", "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==", "sec-websocket-version": "13" };
  /** a WebSocket that opens with the token, or the reason it did not */
  const opens = (path: string, token: string) =>
    new Promise<boolean>((resolve) => {
      const ws = new WebSocket(gw.url.replace(/^http/, "ws") + path, { headers: { authorization: `Bearer ${token}` } } as any);
      ws.onopen = () => {
        ws.close();
        resolve(true);
      };
      ws.onerror = () => resolve(false);
      ws.onclose = () => resolve(false);
    });
  for (const s of SOCKETS)
    test(`WebSocket ${s.path}: ${s.need === "any" ? "any credential of the tenant" : s.need}`, async () => {
      if (s.need === "any") {
        expect(await opens(s.path, await tokenWith([]))).toBe(true);
        return;
      }
      // refused before switching protocols (an upgrade that went through would leave this fetch waiting: bounded)
      const refused = await fetch(gw.url + s.path, { headers: { ...UPGRADE, authorization: `Bearer ${await tokenWith(lacking(s.need))}` }, signal: AbortSignal.timeout(10_000) });
      expect403(s.path, refused.status, await refused.json());
      expect(await opens(s.path, await tokenWith([s.need]))).toBe(true);
    });
});
