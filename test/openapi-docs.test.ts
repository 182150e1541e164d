/**
 * The API reference is usable (issue 28 item 6): every operation of /openapi.json has one tag of the
 * document's top-level list (one per capability, each described, so /docs groups them), a summary,
 * a description of what it does, and a last paragraph saying who may call it — derived from the
 * route's mount and `perm` (src/core/openapi.ts), and checked here against what the route does:
 * a credential without the stated permission gets 403, one with it does not; a route open to any
 * credential answers a token without permissions and refuses a request without one; a public one
 * never asks for a credential. The main operations carry request and response examples, which
 * validate against the operation's own schemas (JSON Schema 2020-12, as OpenAPI 3.1 says), and /docs
 * (Swagger UI) loads with its assets.
 */
import { describe, expect, test, beforeAll, afterAll } from "bun:test";
import Ajv2020 from "ajv/dist/2020";
import addFormats from "ajv-formats";
import { startGateway, type TestGateway } from "./helpers/gateway";
import { startFakeUpstream, type FakeUpstream } from "./fake-upstream/server";
import { ACCESS_PREFIX } from "../src/core/openapi";
import { PERMISSIONS } from "../src/core/auth";

type Json = Record<string, any>;
interface Op {
  method: string;
  path: string;
  op: Json;
}

/** The main operations of each capability: each must show a request example (when it takes a body) and a response example. */
const MAIN = [
  "POST /v1/chat/completions",
  "POST /v1/messages",
  "POST /v1beta/models/{model}:generateContent",
  "POST /v2/chat",
  "POST /v1/generate",
  "POST /api/v1/auth/token",
  "POST /api/v1/auth/login",
  "POST /api/v1/virtual-keys",
  "GET /api/v1/virtual-keys",
  "POST /api/v1/prompts",
  "POST /api/v1/prompts/{id}/execute",
  "POST /api/v1/query",
  "GET /api/v1/cache/stats",
  "GET /api/v1/usage",
  "POST /api/v1/mcp/servers",
  "POST /api/v1/memory/projects/{id}/store",
  "POST /api/v1/memory/projects/{id}/search",
  "POST /api/v1/users",
  "POST /api/v1/teams",
  "POST /api/v1/invitations",
];

/** words that state who may call an operation: only the derived access paragraph says them */
const HAND_WRITTEN_ACCESS = new RegExp(`\\bneeds?\\s+(the\\s+)?\`?(${PERMISSIONS.join("|")})|any credential|no credential|\\(public\\b`, "i");

let gw: TestGateway;
let upstream: FakeUpstream;
let spec: Json;
let ops: Op[];

beforeAll(async () => {
  upstream = await startFakeUpstream();
  const providers = Object.fromEntries(["openai", "anthropic", "gemini", "cohere"].map((p) => [p, { base_url: upstream.url, api_key: "sk-fake" }]));
  gw = await startGateway({ providers });
  const r = await gw.api("/openapi.json");
  expect(r.status).toBe(200);
  spec = (await r.json()) as Json;
  ops = Object.entries<Json>(spec.paths).flatMap(([path, methods]) => Object.entries<Json>(methods).map(([method, op]) => ({ method: method.toUpperCase(), path, op })));
});
afterAll(async () => {
  await gw?.stop();
  await upstream?.stop();
});

const name = (o: Op) => `${o.method} ${o.path}`;
const paragraphs = (o: Op) => String(o.op.description ?? "").split("\n\n");
const accessOf = (o: Op) => paragraphs(o).at(-1)!;
const neededPermission = (o: Op) => /needs the `(\w+)` permission/.exec(accessOf(o))?.[1];
/** a concrete path for an operation (every parameter a value no resource has) */
const concrete = (path: string) => path.replace(/\{(\w+)\}/g, (_, p: string) => (p === "model" ? "gpt-4o-mini" : p === "tenant_id" ? "docs-t" : "00000000-0000-4000-8000-000000000000"));
const call = (o: Op, init: { token?: string; headers?: Record<string, string> } = {}) =>
  gw.api(concrete(o.path), { method: o.method, token: init.token, headers: init.headers, ...(["POST", "PUT", "PATCH"].includes(o.method) ? { json: {} } : {}) });

describe("the API reference (/openapi.json)", () => {
  test("every operation has exactly one tag, from the top-level list; every listed tag is described and used, in capability order", () => {
    const listed: Json[] = spec.tags ?? [];
    const names = listed.map((t) => t.name);
    expect(new Set(names).size).toBe(names.length);
    for (const t of listed) expect(`${t.name}: ${typeof t.description === "string" && t.description.length > 20}`).toBe(`${t.name}: true`);
    const used = new Set<string>();
    for (const o of ops) {
      const tags: string[] = o.op.tags ?? [];
      expect(`${name(o)} tags ${JSON.stringify(tags)} listed: ${tags.length === 1 && names.includes(tags[0]!)}`).toBe(`${name(o)} tags ${JSON.stringify(tags)} listed: true`);
      used.add(tags[0]!);
    }
    expect(names.filter((n) => !used.has(n))).toEqual([]);
    // a newcomer meets the proxies first and operations last
    expect(names[0]).toBe("proxies");
    expect(names.at(-1)).toBe("ops");
    expect(ops.length).toBeGreaterThan(200);
  });

  test("every operation has a summary and a description: what it does, then who may call it", () => {
    const missing: string[] = [];
    for (const o of ops) {
      const ps = paragraphs(o);
      const what = ps.slice(0, -1).join("\n\n").trim();
      if (!String(o.op.summary ?? "").trim()) missing.push(`${name(o)}: no summary`);
      if (!accessOf(o).startsWith(ACCESS_PREFIX)) missing.push(`${name(o)}: no access sentence`);
      if (what.length < 20) missing.push(`${name(o)}: no description of what it does`);
      else if (what === o.op.summary) missing.push(`${name(o)}: description repeats the summary`);
      if (what.includes(ACCESS_PREFIX)) missing.push(`${name(o)}: access sentence written by hand`);
      // who may call it is said once, by the derived paragraph: a hand-copied one could drift
      for (const text of [o.op.summary, what]) if (HAND_WRITTEN_ACCESS.test(text)) missing.push(`${name(o)}: access written by hand: ${HAND_WRITTEN_ACCESS.exec(text)![0]}`);
    }
    expect(missing).toEqual([]);
  });

  test("each stated permission is the one the route enforces: without it 403, with it alone no 401/403", async () => {
    const needs = ops.filter(neededPermission);
    expect(needs.length).toBeGreaterThan(50);
    const none = await gw.token("docs-t", []);
    const wrong: string[] = [];
    for (const o of needs) {
      const perm = neededPermission(o)!;
      expect(PERMISSIONS as readonly string[]).toContain(perm);
      const denied = await call(o, { token: none });
      await denied.body?.cancel();
      if (denied.status !== 403) wrong.push(`${name(o)} without ${perm}: ${denied.status}`);
      const allowed = await call(o, { token: await gw.token("docs-t", [perm]) });
      await allowed.body?.cancel();
      if (allowed.status === 401 || allowed.status === 403) wrong.push(`${name(o)} with ${perm}: ${allowed.status}`);
    }
    expect(wrong).toEqual([]);
  }, 60_000);

  test("'any credential' routes answer a token without permissions and refuse a request without one; public routes never ask for one", async () => {
    const none = await gw.token("docs-t", []);
    const wrong: string[] = [];
    const any = ops.filter((o) => accessOf(o).startsWith(`${ACCESS_PREFIX}any credential`));
    const open = ops.filter((o) => accessOf(o).startsWith(`${ACCESS_PREFIX}public`));
    expect(any.length).toBeGreaterThan(50);
    expect(open.length).toBeGreaterThan(5);
    for (const o of any) {
      const anon = await call(o);
      await anon.body?.cancel();
      if (anon.status !== 401) wrong.push(`${name(o)} without a credential: ${anon.status}`);
      const r = await call(o, { token: none });
      await r.body?.cancel();
      if (r.status === 401 || r.status === 403) wrong.push(`${name(o)} with a credential: ${r.status}`);
    }
    // public: a credential changes nothing (a 401 there is the route's own verdict on what the request carries, e.g. a bad sign-in)
    const admin = await gw.token("docs-t", ["WorkspaceAdmin"]);
    for (const o of open) {
      const anon = await call(o, { headers: { accept: "application/json" } });
      const body = await anon.text();
      const withToken = await call(o, { token: admin, headers: { accept: "application/json" } });
      await withToken.body?.cancel();
      if (anon.status !== withToken.status || /missing credentials/i.test(body)) wrong.push(`${name(o)}: ${anon.status} without a credential, ${withToken.status} with one`);
    }
    // a domain's own credential (SCIM tokens): an svc access token is not one
    for (const o of ops.filter((x) => accessOf(x).startsWith(`${ACCESS_PREFIX}a SCIM token`))) {
      const r = await call(o, { token: admin });
      await r.body?.cancel();
      if (r.status !== 401) wrong.push(`${name(o)} with an svc token: ${r.status}`);
    }
    expect(wrong).toEqual([]);
  }, 60_000);

  test("the main operations carry examples, and every example validates against its operation's schema", () => {
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats(ajv);
    const validate = (schema: Json, value: unknown) => {
      // the document's components resolve from the schema's root, as in the document
      const check = ajv.compile({ ...schema, components: spec.components });
      return check(value) ? "valid" : ajv.errorsText(check.errors);
    };
    const problems: string[] = [];
    let requests = 0;
    let responses = 0;
    for (const o of ops) {
      const body = o.op.requestBody?.content?.["application/json"];
      if (body?.example !== undefined) {
        requests++;
        const v = validate(body.schema ?? {}, body.example);
        if (v !== "valid") problems.push(`${name(o)} request example: ${v}`);
      }
      for (const [status, answer] of Object.entries<Json>(o.op.responses ?? {})) {
        const media = answer.content?.["application/json"];
        if (media?.example === undefined) continue;
        responses++;
        if (!status.startsWith("2")) problems.push(`${name(o)}: an example on ${status}`);
        const v = validate(media.schema ?? {}, media.example);
        if (v !== "valid") problems.push(`${name(o)} ${status} response example: ${v}`);
      }
    }
    for (const m of MAIN) {
      const o = ops.find((x) => name(x) === m);
      if (!o) {
        problems.push(`${m}: not in the document`);
        continue;
      }
      if (o.op.requestBody && o.op.requestBody.content?.["application/json"]?.example === undefined) problems.push(`${m}: no request example`);
      if (!Object.entries<Json>(o.op.responses).some(([s, a]) => s.startsWith("2") && a.content?.["application/json"]?.example !== undefined)) problems.push(`${m}: no response example`);
    }
    expect(problems).toEqual([]);
    expect(requests).toBeGreaterThanOrEqual(15);
    expect(responses).toBeGreaterThanOrEqual(MAIN.length);
  });

  test("an example that breaks its schema is caught (the check above can fail)", () => {
    const ajv = new Ajv2020({ strict: false });
    const o = ops.find((x) => name(x) === "POST /api/v1/prompts")!;
    const schema = o.op.requestBody.content["application/json"].schema;
    expect(ajv.validate({ ...schema, components: spec.components }, o.op.requestBody.content["application/json"].example)).toBe(true);
    expect(ajv.validate({ ...schema, components: spec.components }, { template: 42 })).toBe(false);
  });

  test("the main operations' examples are true: the request example, sent, answers the response example's shape", async () => {
    const token = await gw.token("docs-examples", ["WorkspaceAdmin"]);
    const exampleOf = (m: string) => {
      const o = ops.find((x) => name(x) === m)!;
      const [status, answer] = Object.entries<Json>(o.op.responses).find(([st, a]) => st.startsWith("2") && a.content?.["application/json"]?.example !== undefined)!;
      return { o, request: o.op.requestBody?.content?.["application/json"]?.example, status: Number(status), response: answer.content["application/json"].example };
    };
    const send = async (m: string, fix: { path?: Record<string, string>; body?: (b: Json) => Json; headers?: Record<string, string> } = {}) => {
      const { o, request, status, response } = exampleOf(m);
      const path = o.path.replace(/\{(\w+)\}/g, (_, p: string) => fix.path?.[p] ?? p);
      const body = request === undefined ? undefined : fix.body ? fix.body(structuredClone(request)) : request;
      const r = await gw.api(path, { method: o.method, token, headers: fix.headers, ...(body === undefined ? {} : { json: body }) });
      const answer = (await r.json()) as Json;
      expect(`${m} ${r.status} ${r.status === status ? "" : JSON.stringify(answer)}`).toBe(`${m} ${status} `);
      expect(`${m}: ${shapeDiff(response, answer).join("; ")}`).toBe(`${m}: `);
      return answer;
    };
    // identity: a team, a key of that team, the key exchanged for a token; a user; an invitation
    const team = await send("POST /api/v1/teams");
    const key = await send("POST /api/v1/virtual-keys", { body: (b) => ({ ...b, teamId: team.id }) });
    await send("GET /api/v1/virtual-keys");
    await send("POST /api/v1/auth/token", { body: () => ({ apiKey: key.key }) });
    await send("POST /api/v1/users");
    await send("POST /api/v1/invitations");
    // prompts
    const prompt = await send("POST /api/v1/prompts");
    await send("POST /api/v1/prompts/{id}/execute", { path: { id: prompt.id } });
    // proxies, then the cache and usage they fed
    await send("POST /v1/chat/completions");
    await send("POST /v1/messages", { headers: { "anthropic-version": "2023-06-01" } });
    await send("POST /v1beta/models/{model}:generateContent", { path: { model: "gemini-2.0-flash" } });
    await send("POST /v2/chat");
    await send("POST /v1/generate");
    await send("POST /api/v1/query");
    await send("GET /api/v1/cache/stats");
    await send("GET /api/v1/usage");
    // memory: the example's project, a milestone, a search that finds it
    const project = await gw.api("/api/v1/memory/projects", { method: "POST", token, json: { projectId: "checkout-service", name: "Checkout service", roadmap: "" } });
    expect(project.status).toBe(201);
    await gw.ctx.embedder?.load();
    const stored = await send("POST /api/v1/memory/projects/{id}/store", { path: { id: "checkout-service" } });
    // the example's hash is the one svc computes for its content (exact 64-bit integer and hex)
    const shown = exampleOf("POST /api/v1/memory/projects/{id}/store").response as Json;
    expect([stored.contentHash, stored.contentHashHex]).toEqual([shown.contentHash, shown.contentHashHex]);
    // and the search example finds it, past the relevance cut
    const found = await send("POST /api/v1/memory/projects/{id}/search", { path: { id: "checkout-service" } });
    expect(found.milestones.map((m: Json) => m.milestoneId)).toEqual([stored.milestoneId]);
  }, 120_000);

  test("the shape check above can fail: a missing, an extra and a mistyped field are named", () => {
    expect(shapeDiff({ a: 1, b: { c: "x" } }, { a: 2, b: { c: "y" } })).toEqual([]);
    expect(shapeDiff({ a: 1, b: null }, { a: 2, b: { c: 1 } })).toEqual([]);
    expect(shapeDiff({ a: 1, b: 2 }, { a: 1 })).toEqual(["b: in the example, not in the answer"]);
    expect(shapeDiff({ a: 1 }, { a: 1, z: true })).toEqual(["z: in the answer, not in the example"]);
    expect(shapeDiff({ a: [{ id: "x" }] }, { a: [{ id: 7 }] })).toEqual(["a[0].id: string in the example, number in the answer"]);
  });

  test("the document is valid OpenAPI and /docs (Swagger UI) loads with its assets", async () => {
    const SwaggerParser = (await import("@apidevtools/swagger-parser")).default;
    await SwaggerParser.validate(structuredClone(spec) as never);
    const page = await gw.api("/docs");
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('url: "/openapi.json"');
    for (const asset of html.match(/\/docs\/assets\/[\w.-]+/g) ?? []) {
      const r = await gw.api(asset);
      expect(`${asset} ${r.status}`).toBe(`${asset} 200`);
      expect((await r.arrayBuffer()).byteLength).toBeGreaterThan(1000);
    }
    expect(html.match(/\/docs\/assets\//g)?.length).toBe(2);
  });
});

/**
 * Where an example's shape differs from a real answer: fields on one side only, or of another JSON
 * type (null matches anything: a nullable field; arrays compare their first items; objects with
 * free-form keys, such as metadata, compare when both have keys).
 */
function shapeDiff(example: unknown, answer: unknown, at = ""): string[] {
  if (example === null || answer === null) return [];
  const kind = (v: unknown) => (Array.isArray(v) ? "array" : typeof v);
  if (kind(example) !== kind(answer)) return [`${at || "(root)"}: ${kind(example)} in the example, ${kind(answer)} in the answer`];
  if (Array.isArray(example)) return example.length && (answer as unknown[]).length ? shapeDiff(example[0], (answer as unknown[])[0], `${at}[0]`) : [];
  if (typeof example !== "object") return [];
  const e = example as Json;
  const a = answer as Json;
  const out: string[] = [];
  for (const k of Object.keys(e)) out.push(...(k in a ? shapeDiff(e[k], a[k], at ? `${at}.${k}` : k) : [`${at ? `${at}.` : ""}${k}: in the example, not in the answer`]));
  for (const k of Object.keys(a)) if (!(k in e)) out.push(`${at ? `${at}.` : ""}${k}: in the answer, not in the example`);
  return out;
}
