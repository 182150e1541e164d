/**
 * The dashboard at /ui in a real Chromium (test/ui/browser.ts), end to end against a running svc
 * whose providers are the fake upstream: traffic goes through the openai SDK, and what the pages
 * show must be exactly that traffic. Every page is checked with axe-core (0 serious/critical
 * violations), screenshotted under tmp/test-output/ui, and must log no console error.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import OpenAI from "openai";
import type { Page } from "playwright-core";
import { startProxyEnv, type ProxyEnv } from "../gateway/setup";
import { join } from "node:path";
import { axeViolations, launchBrowser, screenshot, type Browser } from "./browser";
import { operatingPoints } from "../../src/ui/bundle";
import { DnsServer, FakeOidcProvider } from "../identity/sso-fakes";

const TENANT = "ui-tenant";
let env: ProxyEnv;
let browser: Browser;
let adminToken: string;
let adminKey: string;
let dns: DnsServer;
let idp: FakeOidcProvider;

const api = async (method: string, path: string, json?: unknown, token = adminToken) => {
  const r = await env.gw.api(path, { method, token, json });
  if (!r.ok) throw new Error(`${method} ${path}: ${r.status} ${await r.text()}`);
  return r.json() as Promise<any>;
};
const sdk = (apiKey: string) => new OpenAI({ apiKey, baseURL: `${env.gw.url}/v1`, maxRetries: 0 });
const ask = (client: OpenAI, text: string, model = "gpt-4o-mini") =>
  client.chat.completions.create({ model, messages: [{ role: "user", content: text }] }).withResponse();

async function checkPage(page: Page & { errors: string[] }, name: string) {
  expect(await axeViolations(page)).toEqual([]);
  await screenshot(page, name);
  expect(page.errors).toEqual([]);
}

async function signIn(page: Page, key: string) {
  await page.goto(`${env.gw.url}/ui`);
  await page.getByLabel("API key").fill(key);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { name: "Overview", level: 1 }).waitFor();
}

/** The number shown next to a label in a stat list (<dt>label</dt><dd>number</dd>). */
const stat = (page: Page, label: string) => page.locator(`.stat:has(dt:text-is("${label}")) dd`);

const goto = async (page: Page, name: string) => {
  await page.getByRole("navigation", { name: "Pages" }).getByRole("link", { name, exact: true }).click();
  await page.getByRole("heading", { name, level: 1 }).waitFor();
};

beforeAll(async () => {
  [dns, idp] = await Promise.all([DnsServer.start(), FakeOidcProvider.start()]);
  // SSO: the connection's domain is verified against a DNS server on loopback, its provider is on loopback too
  const sso = { outbound: { allow_private: true }, identity: { sso: { dns_servers: dns.address, dns_timeout_ms: 1000 } } };
  [env, browser] = await Promise.all([startProxyEnv(sso), launchBrowser()]);
  adminToken = await env.gw.token(TENANT, ["WorkspaceAdmin"], "admin");
  adminKey = (await api("POST", "/api/v1/virtual-keys", { name: "dashboard admin", permissions: ["WorkspaceAdmin"] })).key;
}, 300_000);
afterAll(async () => {
  await browser?.close();
  await env?.stop();
  dns?.stop();
  idp?.stop();
});

describe("dashboard in Chromium", () => {
  test("sign-in page: an `API key` field and a `Sign in` button, served with a strict CSP", async () => {
    const page = await browser.page();
    const res = await page.goto(`${env.gw.url}/ui`);
    expect(res!.headers()["content-security-policy"]).toContain("script-src 'self'");
    expect(res!.headers()["content-security-policy"]).toContain("frame-ancestors 'none'");
    expect(res!.headers()["x-frame-options"]).toBe("DENY");
    await expect(page.getByRole("textbox", { name: "API key" }).isVisible()).resolves.toBe(true);
    await expect(page.getByRole("button", { name: "Sign in" }).isVisible()).resolves.toBe(true);
    await checkPage(page, "signin");
    await page.close();
  }, 60_000);

  test("overview, usage and requests show exactly the traffic sent through the openai SDK", async () => {
    const client = sdk(adminKey);
    // 3 misses, then 2 exact hits
    for (const q of ["What is the capital of France?", "How tall is Mount Everest?", "Who wrote Hamlet?"])
      expect((await ask(client, q)).response.headers.get("x-cache-status")).toBe("MISS");
    for (const q of ["What is the capital of France?", "Who wrote Hamlet?"])
      expect((await ask(client, q)).response.headers.get("x-cache-status")).toBe("HIT");
    // one request the provider fails (5xx) and one over the provider's rate limit (429): no usage record, counted apart
    const failing = async (status: number, q: string) => {
      env.fake.failNext({ kind: "status", status });
      const e = await ask(client, q).then(() => undefined, (err) => err);
      expect(e).toBeInstanceOf(OpenAI.APIError);
      return (e as InstanceType<typeof OpenAI.APIError>).status;
    };
    expect(await failing(500, "A question the provider fails")).toBeGreaterThanOrEqual(500);
    expect(await failing(429, "A question over the provider's rate limit")).toBe(429);

    const page = await browser.page();
    await signIn(page, adminKey);
    // the token is in this tab's sessionStorage, never in localStorage, a cookie or the URL
    expect(await page.evaluate(() => localStorage.length)).toBe(0);
    expect((await browser.context.cookies()).length).toBe(0);
    const token = await page.evaluate(() => JSON.parse(sessionStorage.getItem("svc.session")!).token as string);
    expect(page.url()).not.toContain(token.slice(0, 20));
    await page.getByRole("radio", { name: "Last hour" }).check();
    await expect(stat(page, "Requests").textContent()).resolves.toBe("5");
    await expect(stat(page, "Exact hits").textContent()).resolves.toBe("2");
    await expect(stat(page, "Misses").textContent()).resolves.toBe("3");
    await expect(stat(page, "Hit ratio").textContent()).resolves.toBe("40.0%");
    await expect(stat(page, "Errors").textContent()).resolves.toBe("1");
    await expect(stat(page, "Rate limited (429)").textContent()).resolves.toBe("1");
    expect(await page.locator("figure.chart canvas").count()).toBeGreaterThanOrEqual(3);
    await page.locator("figure.chart figcaption", { hasText: "Errors and 429s per minute" }).waitFor();
    await expect(page.getByRole("button", { name: "Sign out" }).isVisible()).resolves.toBe(true);
    await checkPage(page, "overview");

    await goto(page, "Usage");
    await stat(page, "Requests").waitFor();
    await expect(stat(page, "Requests").textContent()).resolves.toBe("5");
    await expect(stat(page, "Hits").textContent()).resolves.toBe("2");
    const row = page.locator("table tbody tr", { hasText: "gpt-4o-mini" });
    await expect(row.locator("td").nth(1).textContent()).resolves.toBe("5");
    const download = page.waitForEvent("download");
    await page.getByRole("button", { name: "Export CSV" }).click();
    const csv = await (await download).path().then((p) => Bun.file(p!).text());
    expect(csv.split("\n")[0]).toBe("Model,Requests,Hits,Misses,Hit ratio,Tokens,Cost,Saved");
    expect(csv).toContain("gpt-4o-mini,5,2,3,0.4,");
    await checkPage(page, "usage");

    await goto(page, "Requests");
    await page.locator("table caption", { hasText: "1–5 of 5" }).waitFor();
    await page.getByLabel("Cache status").selectOption("HIT");
    await page.locator("table caption", { hasText: "of 2" }).waitFor();
    // the older hit (France): why it hit, the entry that answered, and "This hit was wrong" through the cache's feedback
    const france = (await api("GET", "/api/v1/usage/requests?cache_status=HIT")).requests[1];
    await page.locator("tbody tr").nth(1).getByRole("button", { name: /^Show/ }).click();
    await expect(page.getByText("Exact hit: the same request").isVisible()).resolves.toBe(true);
    const pair = (label: string) => page.locator(`dl.pairs dt:text-is("${label}") + dd`);
    await expect(pair("Cache entry").textContent()).resolves.toBe(france.cacheEntryId);
    await expect(pair("Similarity").textContent()).resolves.toBe("1.000");
    await checkPage(page, "requests");
    await page.getByRole("button", { name: "This hit was wrong" }).click();
    await page.getByRole("status").filter({ hasText: "the cache was told this hit was wrong" }).waitFor();
    expect((await ask(client, "What is the capital of France?")).response.headers.get("x-cache-status")).toBe("MISS");
    await page.close();
  }, 120_000);

  test("a key created in the UI works from the SDK; revoked in the UI, the SDK is refused", async () => {
    const page = await browser.page();
    await signIn(page, adminKey);
    await goto(page, "Keys");
    await page.getByLabel("Key name").fill("sdk from the dashboard");
    await page.getByRole("button", { name: "Create key" }).click();
    const secret = await page.getByLabel("New API key").inputValue();
    expect(secret.length).toBeGreaterThan(20);
    await expect(page.getByText("it is shown only once").isVisible()).resolves.toBe(true);
    await checkPage(page, "keys");

    const client = sdk(secret);
    expect((await ask(client, "A question from the new key")).response.status).toBe(200);

    await page.getByRole("row", { name: /sdk from the dashboard/ }).getByRole("button", { name: /^Revoke/ }).click();
    await page.getByRole("row", { name: /sdk from the dashboard/ }).getByText("revoked").waitFor();
    const refused = await ask(client, "A question after the revocation").then(
      () => undefined,
      (e) => e,
    );
    expect(refused).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(page.errors).toEqual([]);
    await page.close();
  }, 60_000);

  test("a team's budget bar moves after spend", async () => {
    const team = await api("POST", "/api/v1/teams", { name: "Platform", maxBudgetCents: 1000, budgetPeriod: "monthly" });
    const key = (await api("POST", "/api/v1/virtual-keys", { name: "platform key", teamId: team.id })).key;
    const member = await api("POST", "/api/v1/users", { email: "lin@example.com" });
    await api("POST", `/api/v1/teams/${team.id}/members`, { userIds: [member.id] });
    await api("POST", "/api/v1/teams", { name: "Platform / Search", parentTeamId: team.id });
    const page = await browser.page();
    await signIn(page, adminKey);
    await goto(page, "Teams");
    const bar = page.getByRole("progressbar", { name: "Spend this month" });
    await bar.waitFor();
    expect(await bar.getAttribute("aria-valuenow")).toBe("0");
    await page.getByText("1 active keys · 1 members · sub-teams: Platform / Search").waitFor();
    await page.getByText("0 active keys · 0 members · sub-team of Platform").waitFor();
    await checkPage(page, "teams");

    // 100k prompt tokens of gpt-4o at list price: a measurable share of the $10 budget
    env.fake.reportUsage(100_000);
    try {
      expect((await ask(sdk(key), "Spend some of the budget", "gpt-4o")).response.status).toBe(200);
    } finally {
      env.fake.reportUsage(undefined);
    }
    const spend = await api("GET", `/api/v1/teams/${team.id}/spend`);
    expect(spend.totalSpendCents).toBeGreaterThan(0);
    await page.reload();
    await bar.waitFor();
    expect(Number(await bar.getAttribute("aria-valuenow"))).toBeCloseTo(spend.totalSpendCents, 4);
    // the usage page's team breakdown: the team's key made exactly one request
    await goto(page, "Usage");
    await page.getByLabel("Break down by").selectOption("team");
    const row = page.getByRole("row", { name: /^Platform/ });
    await row.waitFor();
    await expect(row.locator("td").nth(1).textContent()).resolves.toBe("1");
    expect(page.errors).toEqual([]);
    await page.close();
  }, 60_000);

  test("purging the cache in the UI: the next repeated request misses", async () => {
    const client = sdk(adminKey);
    expect((await ask(client, "Who wrote Hamlet?")).response.headers.get("x-cache-status")).toBe("HIT");
    const page = await browser.page();
    await signIn(page, adminKey);
    await goto(page, "Cache");
    await stat(page, "Entries").waitFor();
    expect(Number(await stat(page, "Entries").textContent())).toBeGreaterThan(0);
    // the operating point in use, beside BENCHMARKS.md's measured trade-off of every point
    const cacheStats = await api("GET", "/api/v1/cache/stats");
    const points = operatingPoints(await Bun.file(join(import.meta.dir, "../../BENCHMARKS.md")).text());
    const tradeOff = page.getByRole("table", { name: /Measured by cross-validation on cache-train/ });
    await tradeOff.waitFor();
    expect(await tradeOff.locator("tbody tr").count()).toBe(points.length);
    const inUse = points.find((p) => p.threshold === cacheStats.feedback.point)!;
    expect(inUse).toBeDefined(); // the shipped floor is one of the measured rows
    expect(await tradeOff.locator('tr[aria-current="true"] td').allTextContents()).toEqual([
      `${inUse.label} — in use`,
      inUse.precision.toFixed(3),
      inUse.recall.toFixed(3),
      inUse.falseHitRate.toFixed(3),
    ]);
    await checkPage(page, "cache");
    // search the cache for a question: an exact hit; deleting its entry makes the SDK's next ask a miss
    await page.getByLabel("Question").fill("Who wrote Hamlet?");
    await page.getByRole("button", { name: "Look up" }).click();
    const found = page.getByRole("status").filter({ hasText: "HIT" });
    await found.waitFor();
    expect(await found.textContent()).toContain("exact · similarity 1.000");
    await page.getByRole("button", { name: "Delete this entry" }).click();
    await page.getByText(/^Deleted entry /).waitFor();
    expect((await ask(client, "Who wrote Hamlet?")).response.headers.get("x-cache-status")).toBe("MISS");
    expect((await ask(client, "Who wrote Hamlet?")).response.headers.get("x-cache-status")).toBe("HIT");
    await page.getByRole("button", { name: "Purge cache" }).click();
    await page.getByText(/^Purged \d+ entries\.$/).waitFor();
    await page.locator('.stat:has(dt:text-is("Entries")) dd:text-is("0")').waitFor();
    expect((await ask(client, "Who wrote Hamlet?")).response.headers.get("x-cache-status")).toBe("MISS");
    expect(page.errors).toEqual([]);
    await page.close();
  }, 60_000);

  test("a ViewMetrics key sees read-only pages: no write controls, and the server refuses writes", async () => {
    const viewer = (await api("POST", "/api/v1/virtual-keys", { name: "viewer", permissions: ["ViewMetrics"] })).key;
    const page = await browser.page();
    await signIn(page, viewer);
    const nav = page.getByRole("navigation", { name: "Pages" });
    expect(await nav.getByRole("link").allTextContents()).toEqual(["Overview", "Usage", "Cache", "Prompts", "MCP", "Memory", "System"]);
    await checkPage(page, "viewer-overview");
    await goto(page, "Cache");
    await stat(page, "Entries").waitFor();
    for (const name of ["Purge cache", "Save operating point", /^Delete/]) expect(await page.getByRole("button", { name }).count()).toBe(0);
    await checkPage(page, "viewer-cache");
    await goto(page, "System");
    await checkPage(page, "system");
    // what the page does not offer, the server refuses too
    const token = await page.evaluate(() => JSON.parse(sessionStorage.getItem("svc.session")!).token as string);
    expect((await env.gw.api("/api/v1/cache", { method: "DELETE", token })).status).toBe(403);
    expect((await env.gw.api("/api/v1/virtual-keys", { method: "POST", token, json: { name: "x" } })).status).toBe(403);
    await page.close();
  }, 60_000);

  test("an expired token returns to sign-in (by the clock, and when the server refuses it)", async () => {
    const page = await browser.page();
    await signIn(page, adminKey);
    // a token that expires in 5 s, as the exchange would have issued it (time enough to see the overview first on a busy machine)
    const short = await env.gw.ctx.tokens.sign({ tenantId: TENANT, sub: "admin", permissions: ["WorkspaceAdmin"] }, 5);
    const exp = JSON.parse(atob(short.split(".")[1]!)).exp as number;
    await page.evaluate(([token, exp]) => sessionStorage.setItem("svc.session", JSON.stringify({ ...JSON.parse(sessionStorage.getItem("svc.session")!), token, exp })), [short, exp] as const);
    await page.reload();
    await page.getByRole("heading", { name: "Overview", level: 1 }).waitFor();
    await page.getByRole("button", { name: "Sign in" }).waitFor({ timeout: 20_000 });
    await expect(page.getByText("Your session has expired").isVisible()).resolves.toBe(true);
    expect(page.errors).toEqual([]);

    // the page believes the token valid for an hour, the server does not: its 401 signs out
    await signIn(page, adminKey);
    const dead = await env.gw.ctx.tokens.sign({ tenantId: TENANT, permissions: ["WorkspaceAdmin"] }, 1);
    for (const deadline = Date.now() + 10_000; (await env.gw.api("/api/v1/cache/stats", { token: dead })).status !== 401; ) {
      if (Date.now() > deadline) throw new Error("a 1 s token was still accepted after 10 s");
      await Bun.sleep(100);
    }
    await page.evaluate((token) => sessionStorage.setItem("svc.session", JSON.stringify({ ...JSON.parse(sessionStorage.getItem("svc.session")!), token, exp: Date.now() / 1000 + 3600 })), dead);
    await page.getByRole("navigation", { name: "Pages" }).getByRole("link", { name: "Usage", exact: true }).click();
    await page.getByRole("button", { name: "Sign in" }).waitFor();
    await expect(page.getByText("Your session has expired").isVisible()).resolves.toBe(true);
    expect(await page.evaluate(() => sessionStorage.getItem("svc.session"))).toBeNull();
    // the only console errors: the browser's report of the refused calls
    expect(page.errors.filter((e) => !/status of 401/.test(e))).toEqual([]);
    await page.close();
  }, 60_000);

  test("prompts, MCP, memory and identity pages list what the API holds", async () => {
    const prompt = await api("POST", "/api/v1/prompts", { name: "Greeting", template: "Hello {{name}}\nHave a nice day.", model: "gpt-4o-mini" });
    await api("POST", `/api/v1/prompts/${prompt.id}/versions`, { template: "Hi {{name}}, welcome!\nHave a nice day.", message: "friendlier" });
    await api("POST", "/api/v1/memory/projects", { projectId: "dashboard-project", name: "dashboard-project", roadmap: "Ship the dashboard" });
    await api("POST", "/api/v1/memory/projects/dashboard-project/store", {
      branchPurpose: "build the admin dashboard",
      cumulativeProgress: "overview and usage pages render real aggregates",
      thisContribution: "charted requests and cache hits per hour with uPlot",
      agentId: "agent-1",
    });
    await api("POST", "/api/v1/chains", { name: "Summarise twice", steps: [{ modelId: "gpt-4o-mini" }, { modelId: "gpt-4o-mini" }] });
    const page = await browser.page();
    await signIn(page, adminKey);
    await goto(page, "Prompts");
    await page.getByRole("button", { name: "Open Greeting" }).click();
    // side by side: v1 on the left, v2 on the right, the changed line marked on each side
    const diff = page.getByRole("table", { name: "Template v1 (left) and v2 (right)" });
    await diff.waitFor();
    expect(await diff.locator("tbody tr").evaluateAll((rows) => rows.map((r) => [...(r as any).cells].map((c: any) => [c.className, c.textContent])))).toEqual([
      [["del", "removed: Hello {{name}}"], ["add", "added: Hi {{name}}, welcome!"]],
      [["", "Have a nice day."], ["", "Have a nice day."]],
    ]);
    await page.getByLabel(/^name/).fill("Ada");
    await page.getByRole("button", { name: "Render" }).click();
    await page.locator("pre.out", { hasText: "Hi Ada, welcome!" }).waitFor();
    const before = env.fake.received("/v1/chat/completions").length;
    await page.getByRole("button", { name: "Execute" }).click();
    await page.locator("pre.out", { hasText: /^answer #\d+: Hi Ada, welcome!/ }).waitFor();
    expect(env.fake.received("/v1/chat/completions").length).toBe(before + 1);
    // a chain of two steps, run from the page: the second step gets the first one's answer
    await page.getByRole("button", { name: "Run Summarise twice" }).click();
    await page.getByLabel("Chain input").fill("Tell me about Ada");
    const calls = env.fake.received("/v1/chat/completions").length;
    await page.getByRole("button", { name: "Run chain" }).click();
    const out = page.getByLabel("Chain output");
    await out.waitFor();
    expect(await out.textContent()).toMatch(/^answer #\d+: answer #\d+: Tell me about Ada$/);
    expect(await page.getByRole("table", { name: /Steps of this run/ }).locator("tbody tr").count()).toBe(2);
    expect(env.fake.received("/v1/chat/completions").length).toBe(calls + 2);
    await checkPage(page, "prompts");
    await goto(page, "MCP");
    await page.locator("table caption", { hasText: "Servers (0)" }).waitFor();
    await stat(page, "Tool calls").waitFor();
    // live activity over the WebSocket (the token as a subprotocol, not in the URL): an invalidation appears
    await page.getByText("Connected: new tool calls").waitFor();
    await api("POST", "/api/v1/mcp/entities", { name: "dashboard-entity" });
    await api("POST", "/api/v1/tool-cache/invalidate", { entityType: "dashboard-entity" });
    await page.getByRole("list", { name: "Live MCP activity" }).getByText(/invalidated 0 entries \(manual, dashboard-entity\)/).waitFor();
    await checkPage(page, "mcp");
    await goto(page, "Memory");
    await page.getByRole("cell", { name: "dashboard-project", exact: true }).waitFor();
    await page.getByLabel("Search milestones").fill("uPlot charts of cache hits");
    await page.getByRole("button", { name: "Search", exact: true }).click();
    await page.getByRole("cell", { name: "charted requests and cache hits per hour with uPlot" }).waitFor();
    await page.getByRole("button", { name: "Show branches of dashboard-project" }).click();
    const branches = page.getByRole("table", { name: /Branches of dashboard-project/ });
    // the table may show before its rows arrive: wait for the row, then read it
    await branches.getByRole("cell", { name: "main", exact: true }).waitFor();
    expect(await branches.locator("tbody tr td").allTextContents()).toEqual(expect.arrayContaining(["main", "1"]));
    await checkPage(page, "memory");
    await goto(page, "SSO / SCIM");
    await page.locator("table caption", { hasText: "SSO connections" }).waitFor();
    await page.locator("table caption", { hasText: "Recent SCIM activity" }).waitFor();
    await checkPage(page, "identity");
    await page.close();
  }, 60_000);

  test("users: invite with a role, suspend and reactivate, assign a role with an expiry", async () => {
    const user = await api("POST", "/api/v1/users", { email: "ada@example.com", name: "Ada" });
    const roles = (await api("GET", "/api/v1/roles")).roles as Array<{ id: string; name: string }>;
    const page = await browser.page();
    await signIn(page, adminKey);
    await goto(page, "Users");
    await page.getByLabel("E-mail").fill("grace@example.com");
    await page.getByLabel("Role", { exact: true }).selectOption({ label: roles[1]!.name });
    await page.getByRole("button", { name: "Send invitation" }).click();
    await page.getByRole("row", { name: /grace@example\.com/ }).waitFor();
    const invites = (await api("GET", "/api/v1/invitations")).invitations;
    expect(invites.map((i: any) => [i.email, i.roleId, i.status])).toEqual([["grace@example.com", roles[1]!.id, "pending"]]);

    const row = page.getByRole("row", { name: /ada@example\.com/ });
    await row.getByRole("button", { name: "Suspend ada@example.com" }).click();
    await row.getByRole("button", { name: "Reactivate ada@example.com" }).waitFor();
    expect((await api("GET", `/api/v1/users/${user.id}`)).status).toBe("SUSPENDED");
    await checkPage(page, "users");
    await row.getByRole("button", { name: "Reactivate ada@example.com" }).click();
    await row.getByRole("button", { name: "Suspend ada@example.com" }).waitFor();
    expect((await api("GET", `/api/v1/users/${user.id}`)).status).toBe("ACTIVE");

    await row.getByLabel("Role for ada@example.com").selectOption({ label: roles[0]!.name });
    await row.getByLabel("Role expiry for ada@example.com (optional)").fill("2099-12-31");
    await row.getByRole("button", { name: "Assign role to ada@example.com" }).click();
    await row.getByText(`${roles[0]!.name} (until 2099-12-31 23:59:59Z)`).waitFor();
    const held = (await api("GET", `/api/v1/users/${user.id}/roles`)).assignments;
    expect(held.map((a: any) => [a.roleId, a.expiresAt])).toEqual([[roles[0]!.id, "2099-12-31T23:59:59.000Z"]]);
    expect(page.errors).toEqual([]);
    await page.close();
  }, 60_000);

  test("keyboard only: sign in, skip to the content, reach every page and Sign out", async () => {
    const page = await browser.page();
    await page.goto(`${env.gw.url}/ui`);
    await page.getByLabel("API key").waitFor();
    await page.keyboard.press("Tab");
    expect(await page.evaluate(() => (globalThis as any).document.activeElement?.id)).toBe("apikey");
    await page.keyboard.type(adminKey);
    await page.keyboard.press("Enter");
    await page.getByRole("heading", { name: "Overview", level: 1 }).waitFor();
    // a page opened moves focus to its content; Shift+Tab from there is Sign out
    expect(await page.evaluate(() => (globalThis as any).document.activeElement?.id)).toBe("main");
    await page.keyboard.press("Shift+Tab");
    expect(await page.evaluate(() => (globalThis as any).document.activeElement?.textContent)).toBe("Sign out");
    // from the top, Tab walks through "Skip to content", every page link, then Sign out
    await page.getByRole("link", { name: "Skip to content" }).focus();
    const seen: string[] = ["Skip to content"];
    for (let i = 0; i < 20 && !seen.includes("Sign out"); i++) {
      await page.keyboard.press("Tab");
      seen.push(await page.evaluate(() => ((globalThis as any).document.activeElement?.textContent ?? "").trim()));
    }
    expect(seen).toEqual(["Skip to content", "Overview", "Usage", "Requests", "Keys", "Cache", "Teams", "Prompts", "MCP", "Memory", "Users", "SSO / SCIM", "System", "Sign out"]);
    await page.getByRole("link", { name: "Skip to content" }).focus();
    await page.keyboard.press("Enter");
    expect(await page.evaluate(() => (globalThis as any).document.activeElement?.id)).toBe("main");
    // a page link opens with Enter
    await page.getByRole("link", { name: "Usage", exact: true }).focus();
    await page.keyboard.press("Enter");
    await page.getByRole("heading", { name: "Usage", level: 1 }).waitFor();
    expect(page.errors).toEqual([]);
    await page.close();
  }, 60_000);

  test("behind a reverse proxy's path prefix (/svc/ui and /svc/ui/), with no rewrite rules", async () => {
    // a proxy that serves svc under /svc/ and forwards everything else nowhere
    const proxy = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: async (req) => {
        const url = new URL(req.url);
        if (!url.pathname.startsWith("/svc/")) return new Response("not here", { status: 404 });
        const upstream = await fetch(env.gw.url + url.pathname.slice(4) + url.search, { method: req.method, headers: req.headers, body: req.body, redirect: "manual" });
        return new Response(upstream.body, { status: upstream.status, headers: upstream.headers });
      },
    });
    try {
      for (const path of ["/svc/ui", "/svc/ui/"]) {
        const page = await browser.page();
        const outside: string[] = [];
        page.on("request", (r) => {
          if (!new URL(r.url()).pathname.startsWith("/svc/")) outside.push(r.url());
        });
        await page.goto(`http://127.0.0.1:${proxy.port}${path}`);
        await page.getByLabel("API key").fill(adminKey);
        await page.getByRole("button", { name: "Sign in" }).click();
        await stat(page, "Requests").waitFor();
        await goto(page, "Keys");
        await page.getByRole("cell", { name: "dashboard admin", exact: true }).waitFor();
        expect(outside).toEqual([]);
        expect(page.errors).toEqual([]);
        await page.close();
      }
    } finally {
      proxy.stop(true);
    }
  }, 60_000);

  test("SSO sign-in returns to the dashboard signed in (a one-time code in the fragment, never the token)", async () => {
    const C = "/api/v1/sso/connections";
    const domain = "dashboard-sso.test";
    const c = await api("POST", C, { name: "dashboard sso", protocol: "oidc", jitProvisioning: true, defaultRole: "viewer", oidcConfig: { issuerUrl: idp.issuer, clientId: idp.clientId, clientSecret: idp.clientSecret } });
    const d = (await api("POST", `${C}/${c.id}/domains`, { domain })).domain;
    dns.records.set(`_svc-verify.${domain}`, [d.verificationToken]);
    expect((await api("PUT", `${C}/${c.id}/domains/${d.id}/verify`)).success).toBe(true);
    expect((await api("POST", `${C}/${c.id}/test`)).success).toBe(true);
    await api("POST", `${C}/${c.id}/activate`);
    idp.email = `ada@${domain}`;
    const page = await browser.page();
    const urls: string[] = [];
    // every navigation, redirect hops included, and every call the page made
    page.on("request", (r) => urls.push(r.url()));
    page.on("framenavigated", (f) => urls.push(f.url()));
    await page.goto(`${env.gw.url}/ui`);
    await page.getByLabel("Work e-mail").fill(`ada@${domain}`);
    await page.getByRole("button", { name: "Continue with SSO" }).click();
    await page.getByRole("heading", { name: "Overview", level: 1 }).waitFor();
    const token = await page.evaluate(() => JSON.parse(sessionStorage.getItem("svc.session")!).token as string);
    // the way back went through the provider and /ui#sso=<code>; no URL carried the token, and the code is gone from the address bar
    expect(urls.some((u) => u.startsWith(idp.issuer))).toBe(true);
    expect(urls.some((u) => /\/ui#sso=/.test(u))).toBe(true);
    expect(urls.filter((u) => u.includes(token.slice(-20)))).toEqual([]);
    expect(page.url()).toBe(`${env.gw.url}/ui`);
    // the viewer role's pages (its permissions come from the sign-in's answer): no administration
    expect(await page.getByRole("navigation", { name: "Pages" }).getByRole("link").allTextContents()).toEqual(["Overview", "Usage", "Requests", "Keys", "Cache", "Prompts", "MCP", "Memory", "System"]);
    expect(page.errors).toEqual([]);
    await page.close();
  }, 60_000);

  test("Sign out ends the session", async () => {
    const page = await browser.page();
    await signIn(page, adminKey);
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByRole("button", { name: "Sign in" }).waitFor();
    expect(await page.evaluate(() => sessionStorage.getItem("svc.session"))).toBeNull();
    expect(page.errors).toEqual([]);
    await page.close();
  }, 60_000);
});
