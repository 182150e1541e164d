/**
 * Regression tests for the reliability probe's defects (issue 9), each from the outside through
 * fetch: authentication before anything else, bounded parsing, no 5xx on malformed input, bounded
 * token claims, answers always in the envelope with X-Request-ID.
 */
import { describe, expect, test, beforeAll, afterAll } from "bun:test";
import { SignJWT } from "jose";
import { connect } from "node:net";
import { startGateway, TEST_JWT_SECRET, type TestGateway } from "./helpers/gateway";

const RID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const nested = (depth: number) => '{"a":'.repeat(depth) + "1" + "}".repeat(depth);
const deepArray = (depth: number) => "[".repeat(depth) + "]".repeat(depth);

let gw: TestGateway;
let token: string;
beforeAll(async () => {
  gw = await startGateway({ rate_limits: { enabled: false } });
  token = await gw.token("hard-a", ["WorkspaceAdmin"]);
});
afterAll(() => gw.stop());

const raw = (path: string, init: RequestInit & { auth?: boolean } = {}) => {
  const headers = new Headers(init.headers);
  if (init.auth) headers.set("authorization", `Bearer ${token}`);
  if (init.body !== undefined && !headers.has("content-type")) headers.set("content-type", "application/json");
  return fetch(gw.url + path, { ...init, headers });
};

/** status, doc1 envelope with the type, X-Request-ID */
async function expectDoc1(r: Response, status: number, type: string) {
  const text = await r.text();
  expect(`${r.status} ${text.slice(0, 200)}`).toStartWith(`${status} `);
  expect(r.headers.get("x-request-id")).toMatch(RID);
  const body = JSON.parse(text);
  expect(body).toEqual({ error: { message: expect.any(String), type } });
  return body.error.message as string;
}

describe("1. a deeply nested body answers at once, with or without a token", () => {
  const paths = ["/api/v1/query", "/api/v1/chains", "/api/v1/chains/00000000-0000-4000-8000-000000000000", "/api/v1/chains/00000000-0000-4000-8000-000000000000/execute"];
  test("depth 10,000 (60 KB): 401 without a token, 400 naming the bound with one; /health answers meanwhile", async () => {
    for (const path of paths) {
      const method = path.endsWith("-000000000000") ? "PUT" : "POST";
      const t0 = performance.now();
      const [anon, authed, health] = await Promise.all([raw(path, { method, body: nested(10_000) }), raw(path, { method, body: nested(10_000), auth: true }), fetch(gw.url + "/health")]);
      await expectDoc1(anon, 401, "authentication_error");
      expect(await expectDoc1(authed, 400, "validation_error")).toContain("nests deeper than 64 levels");
      expect(health.status).toBe(200);
      // the probe saw 3.5-24 s; the bound here is generous for a loaded 2-core machine
      expect(performance.now() - t0).toBeLessThan(2_000);
    }
  });
  test("a 10,000-deep array inside a field: 400, not a stack overflow (500)", async () => {
    const body = `{"name":"x","template":${deepArray(10_000)}}`;
    await expectDoc1(await raw("/api/v1/prompts", { method: "POST", body }), 401, "authentication_error");
    await expectDoc1(await raw("/api/v1/prompts", { method: "POST", body, auth: true }), 400, "validation_error");
    await expectDoc1(await raw("/v1/chat/completions", { method: "POST", body: `{"model":"m","messages":${deepArray(10_000)}}`, auth: true }), 400, "validation_error");
  });
  test("a rejected value is never rendered in the answer", async () => {
    const big = "x".repeat(200_000);
    const message = await expectDoc1(await raw("/api/v1/prompts", { method: "POST", body: JSON.stringify({ name: "x", template: { big } }), auth: true }), 400, "validation_error");
    expect(message).toBe("body field 'template': Expected string");
  });
});

describe("2. malformed percent-encoding is a 404, never a 500", () => {
  const cases: Array<[string, string]> = [
    ["GET", "/v1/models/%ff%fe"],
    ["GET", "/v1beta/models/%"],
    ["POST", "/v1beta/models/%E0%A4%A:generateContent"],
    ["GET", "/api/v1/prompts/%E0%A4%A"],
  ];
  test("with a token: 404 not_found in the envelope; without: 401", async () => {
    for (const [method, path] of cases) {
      const body = method === "POST" ? JSON.stringify({ contents: [] }) : undefined;
      await expectDoc1(await raw(path, { method, body }), 401, "authentication_error");
      await expectDoc1(await raw(path, { method, body, auth: true }), 404, "not_found");
    }
  });
});

describe("4. authentication before validation on every route", () => {
  test("no token: 401 for bodies and queries that would be invalid", async () => {
    await expectDoc1(await raw("/api/v1/prompts", { method: "POST", body: "{}" }), 401, "authentication_error");
    await expectDoc1(await raw("/api/v1/prompts?page=abc"), 401, "authentication_error");
    await expectDoc1(await raw("/api/v1/rate-limits/x", { method: "PUT", body: JSON.stringify({ tier: "gold" }) }), 401, "authentication_error");
    await expectDoc1(await raw("/api/v1/prompts", { method: "POST", body: "{not json" }), 401, "authentication_error");
  });
});

describe("5. credentials only where they belong", () => {
  test("admin routes accept Authorization: Bearer only — not ?key=, x-api-key or x-goog-api-key", async () => {
    const { key } = await gw.ctx.apiKeys.create("hard-a", "k", ["WorkspaceAdmin"]);
    for (const cred of [token, key]) {
      await expectDoc1(await raw(`/api/v1/prompts?key=${encodeURIComponent(cred)}`), 401, "authentication_error");
      await expectDoc1(await raw("/api/v1/prompts", { headers: { "x-api-key": cred } }), 401, "authentication_error");
      await expectDoc1(await raw("/api/v1/prompts", { headers: { "x-goog-api-key": cred } }), 401, "authentication_error");
      expect((await raw("/api/v1/prompts", { headers: { authorization: `Bearer ${cred}` } })).status).toBe(200);
    }
  });
});

describe("6. a body that is not the declared JSON object is a 400", () => {
  test("a truncated body makes no copy; strings, arrays, null and an empty body do not update", async () => {
    const p = await (await raw("/api/v1/prompts", { method: "POST", body: JSON.stringify({ name: "orig", template: "t" }), auth: true })).json();
    const before = (await (await raw("/api/v1/prompts", { auth: true })).json()).total;
    expect(await expectDoc1(await raw(`/api/v1/prompts/${p.id}/duplicate`, { method: "POST", body: '{"name":"dup",', auth: true }), 400, "invalid_request_error")).toContain("JSON");
    expect((await (await raw("/api/v1/prompts", { auth: true })).json()).total).toBe(before);
    for (const body of ['"s"', "[]", "null", ""]) {
      await expectDoc1(await raw(`/api/v1/prompts/${p.id}`, { method: "PUT", body, auth: true }), 400, "validation_error");
      const f = await (await raw("/api/v1/folders", { method: "POST", body: JSON.stringify({ name: "f", parentId: null }), auth: true })).json();
      await expectDoc1(await raw(`/api/v1/folders/${f.id}`, { method: "PUT", body, auth: true }), 400, "validation_error");
    }
    expect(await expectDoc1(await raw(`/api/v1/prompts/${p.id}/duplicate`, { method: "POST", body: "[1]", auth: true }), 400, "validation_error")).toContain("expected a JSON object, got an array");
  });
});

describe("7. token claims are bounded", () => {
  const now = () => Math.floor(Date.now() / 1000);
  const sign = (claims: Record<string, unknown>, iat = now(), exp = now() + 3600) =>
    new SignJWT(claims).setProtectedHeader({ alg: "HS256" }).setIssuedAt(iat).setExpirationTime(exp).sign(new TextEncoder().encode(TEST_JWT_SECRET));
  test("odd tenant ids, a future iat and a 100-year lifetime are refused; bounded ones work", async () => {
    const refused: string[] = [
      await sign({ tenant_id: " " }),
      await sign({ tenant_id: "*" }),
      await sign({ tenant_id: "a\u0000b" }),
      await sign({ tenant_id: "t".repeat(10_000) }),
      await sign({ tenant_id: "ok" }, now() + 3600), // issued an hour from now
      await sign({ tenant_id: "ok" }, now(), now() + 100 * 365 * 86_400), // 100 years
      await sign({ tenant_id: "ok", permissions: "WorkspaceAdmin" }), // not a list
      await sign({ tenant_id: "ok", sub: "x".repeat(300) }),
    ];
    for (const t of refused) await expectDoc1(await raw("/api/v1/prompts", { headers: { authorization: `Bearer ${t}` } }), 401, "authentication_error");
    const fine = await sign({ tenant_id: "acme.team-1:eu@x", permissions: [] }, now() + 30); // within the clock skew
    expect((await raw("/api/v1/prompts", { headers: { authorization: `Bearer ${fine}` } })).status).toBe(200);
    expect(() => gw.ctx.tokens.sign({ tenantId: "a b" })).toThrow(/tenant id/);
  });
});

describe("8. oversize headers and bodies answer in the envelope with X-Request-ID", () => {
  test("headers over server.max_header_bytes (16 KiB): 431 in the path's envelope", async () => {
    // npm test runs bun with --max-http-header-size=262144 so that svc, not the HTTP parser, answers
    expect(process.execArgv.join(" ") + " " + (process.env.BUN_OPTIONS ?? "")).toContain("--max-http-header-size");
    const r = await raw("/api/v1/prompts", { headers: { "x-filler": "a".repeat(20_000) }, auth: true });
    expect(r.status).toBe(431);
    expect(r.headers.get("x-request-id")).toMatch(RID);
    expect(await r.json()).toEqual({ error: { type: "invalid_request_error", message: "request headers exceed 16384 bytes" } });
  });
  test("bodies over server.max_body_bytes: 413 invalid_request_error (documented in docs/security.md)", async () => {
    const small = await startGateway({ server: { max_body_bytes: 2048 } });
    try {
      const t = await small.token("hard-b");
      const r = await fetch(small.url + "/api/v1/prompts", { method: "POST", headers: { authorization: `Bearer ${t}`, "content-type": "application/json" }, body: JSON.stringify({ name: "x", template: "y".repeat(5000) }) });
      expect(r.status).toBe(413);
      expect(r.headers.get("x-request-id")).toMatch(RID);
      expect(await r.json()).toEqual({ error: { type: "invalid_request_error", message: "request body exceeds 2048 bytes" } });
    } finally {
      await small.stop();
    }
  });
});

describe("9. text the store accepts", () => {
  test("NUL characters and unpaired surrogates in admin bodies are 400 naming the field; nothing is stored", async () => {
    const before = (await (await raw("/api/v1/prompts", { auth: true })).json()).total;
    for (const body of ['{"name":"a\\u0000b","template":"t"}', '{"name":"ok","template":"x\\ud800y"}', '{"name":"ok","template":"t","tags":["\\udfff"]}']) {
      expect(await expectDoc1(await raw("/api/v1/prompts", { method: "POST", body, auth: true }), 400, "validation_error")).toContain("NUL characters or unpaired surrogates");
    }
    expect((await (await raw("/api/v1/prompts", { auth: true })).json()).total).toBe(before);
    // well-formed text outside the BMP is fine
    expect((await raw("/api/v1/prompts", { method: "POST", body: JSON.stringify({ name: "emoji 🚀", template: "t" }), auth: true })).status).toBe(201);
  });
});

describe("issue 22 item 12: bytes that are not UTF-8 inside a JSON body", () => {
  test("400 invalid_request_error instead of U+FFFD stored silently; nothing is stored; valid UTF-8 still accepted", async () => {
    const before = (await (await raw("/api/v1/prompts", { auth: true })).json()).total;
    const enc = new TextEncoder();
    const bodies = [
      [enc.encode('{"name":"bad '), Uint8Array.of(0xff), enc.encode('","template":"t"}')], // a byte that never occurs in UTF-8
      [enc.encode('{"name":"ok","template":"'), Uint8Array.of(0xc3), enc.encode('"}')], // a truncated two-byte sequence
      [enc.encode('{"name":"ok","template":"'), Uint8Array.of(0xed, 0xa0, 0x80), enc.encode('"}')], // an encoded surrogate (CESU-8)
      [enc.encode('{"name":"ok","template":"'), Uint8Array.of(0xc0, 0xaf), enc.encode('"}')], // an overlong "/"
    ].map((parts) => Buffer.concat(parts));
    for (const body of bodies) {
      const message = await expectDoc1(await raw("/api/v1/prompts", { method: "POST", body, auth: true }), 400, "invalid_request_error");
      expect(message).toContain("not valid UTF-8");
    }
    expect((await (await raw("/api/v1/prompts", { auth: true })).json()).total).toBe(before);
    // without a token: 401 first, as always
    await expectDoc1(await raw("/api/v1/prompts", { method: "POST", body: bodies[0] }), 401, "authentication_error");
    const ok = await raw("/api/v1/prompts", { method: "POST", body: Buffer.from(JSON.stringify({ name: "naïve café", template: "t" })), auth: true });
    expect(ok.status).toBe(201);
    expect((await ok.json()).name).toBe("naïve café");
  });
});

describe("issue 22 item 13: many request headers", () => {
  /** One raw HTTP/1.1 request with `n` extra header lines; the raw answer. */
  const rawRequest = (path: string, n: number, extra = "") =>
    new Promise<string>((resolve, reject) => {
      const url = new URL(gw.url);
      let answer = "";
      const socket = connect(Number(url.port), url.hostname);
      socket.on("data", (d: Buffer) => (answer += d.toString("latin1")));
      socket.on("close", () => resolve(answer));
      socket.on("error", reject);
      let head = `GET ${path} HTTP/1.1\r\nHost: ${url.host}\r\nConnection: close\r\n${extra}`;
      for (let i = 0; i < n; i++) head += `X-Filler-${i}: v\r\n`;
      socket.write(head + "\r\n");
    });

  test("more than 100 header fields: 431 in the path's envelope with X-Request-ID, for doc1 and doc2 paths, before authentication", async () => {
    for (const [path, envelope] of [
      ["/api/v1/prompts", { error: { type: "invalid_request_error", message: "request has 150 header fields; at most 100 are accepted" } }],
      ["/api/v1/mcp/servers", { type: "invalid_request_error", message: "request has 150 header fields; at most 100 are accepted" }],
    ] as const) {
      // 148 filler lines + Host + Connection = 150 fields; no credential: the bound comes before authentication (not 401)
      const [head, body] = (await rawRequest(path, 148)).split("\r\n\r\n");
      expect(head).toStartWith("HTTP/1.1 431");
      expect(head).toMatch(new RegExp(`x-request-id: ${RID.source.slice(1, -1)}`, "i"));
      expect(JSON.parse(body!.replace(/^[0-9a-f]+\r\n|\r\n0\r\n$/g, ""))).toEqual(envelope);
    }
    // fetch with as many: the same answer; 100 fields still pass
    const many = Object.fromEntries(Array.from({ length: 120 }, (_, i) => [`x-filler-${i}`, "v"]));
    const r = await raw("/api/v1/prompts", { headers: many, auth: true });
    expect(r.status).toBe(431);
    expect(r.headers.get("x-request-id")).toMatch(RID);
    const fine = Object.fromEntries(Array.from({ length: 90 }, (_, i) => [`x-filler-${i}`, "v"]));
    expect((await raw("/api/v1/prompts", { headers: fine, auth: true })).status).toBe(200);
  });
});
