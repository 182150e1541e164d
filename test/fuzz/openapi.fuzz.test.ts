/**
 * Property-based fuzzing of every operation in /openapi.json — so every route a domain mounts
 * later is covered without touching this file. For each operation, seeded and bounded
 * (FUZZ_RUNS, FUZZ_SEED; `bun scripts/fuzz.ts` runs longer):
 *  - without a credential (non-public operations): whatever the path, query and body, 401 in the
 *    operation's envelope — before any other answer;
 *  - with a credential: random and hostile inputs (JSON of every shape, truncated JSON, deep
 *    nesting, large strings, invalid UTF-8, NUL, malformed percent-encoding, wrong types in
 *    declared fields) never get an internal error: every 4xx/5xx is in the operation's envelope
 *    family, a 5xx only with a type that names an upstream/dependency condition, and every answer
 *    carries X-Request-ID;
 *  - pathological inputs are answered within a time bound while /health stays responsive.
 */
import { describe, expect, test, beforeAll, afterAll } from "bun:test";
import fc from "fast-check";
import { startGateway, type TestGateway } from "../helpers/gateway";
import { startFakeUpstream, type FakeUpstream } from "../fake-upstream/server";

const RUNS = Number(process.env.FUZZ_RUNS ?? 12);
const SEED = Number(process.env.FUZZ_SEED ?? 20261123);
const RID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** 5xx types that report an upstream or dependency condition (doc1 §7, doc2 §7), never a defect */
const DEPENDENCY_5XX = new Set(["proxy_error", "timeout_error", "service_unavailable", "embedding_error", "discovery_error"]);

type Json = any;
interface Operation {
  method: string;
  path: string;
  public: boolean;
  /** the error schema of the operation's envelope (components/schemas) */
  errorSchema: Json;
  /** statuses whose body the document declares with another schema (a protocol's own errors) */
  errorSchemas: Record<string, Json>;
  body?: Json;
  query: Array<{ name: string; schema: Json }>;
}

let gw: TestGateway;
let fake: FakeUpstream;
let token: string;
let ops: Operation[] = [];
let schemas: Record<string, Json> = {};

beforeAll(async () => {
  fake = await startFakeUpstream();
  const providers = Object.fromEntries(["openai", "anthropic", "gemini", "cohere"].map((p) => [p, { base_url: fake.url, api_key: "k", timeout_ms: 3_000 }]));
  gw = await startGateway({ providers, rate_limits: { enabled: false } });
  token = await gw.token("fuzz-a", ["WorkspaceAdmin"], "fuzzer");
  const doc = await (await fetch(gw.url + "/openapi.json")).json();
  schemas = doc.components?.schemas ?? {};
  for (const [path, methods] of Object.entries<Json>(doc.paths))
    for (const [method, op] of Object.entries<Json>(methods)) {
      const ref: string | undefined = (Object.values<Json>(op.responses).find((r) => r?.content && Object.values<Json>(r.content)[0]?.schema?.$ref)?.content as Json);
      const errorRef = ref ? (Object.values<Json>(ref)[0]!.schema.$ref as string) : undefined;
      ops.push({
        method: method.toUpperCase(),
        path,
        public: Array.isArray(op.security) && op.security.length === 0,
        errorSchema: errorRef ? schemas[errorRef.split("/").pop()!] : undefined,
        errorSchemas: Object.fromEntries(
          Object.entries<Json>(op.responses)
            .map(([st, r]) => [st, (Object.values<Json>(r?.content ?? {})[0]?.schema?.$ref as string | undefined) ?? ""] as const)
            .filter(([st, ref]) => ref && ref !== errorRef && Number(st) >= 400)
            .map(([st, ref]) => [st, schemas[ref.split("/").pop()!]]),
        ),
        body: op.requestBody?.content?.["application/json"]?.schema,
        query: (op.parameters ?? []).filter((p: Json) => p.in === "query").map((p: Json) => ({ name: p.name, schema: p.schema })),
      });
    }
}, 60_000);
afterAll(async () => {
  await gw?.stop();
  await fake?.stop();
});

/** the value has the envelope's required keys at every level, strings where strings are declared */
function conforms(schema: Json, value: unknown): boolean {
  if (!schema) return true;
  if (schema.type === "string") return typeof value === "string";
  if (schema.type === "object") {
    if (!value || typeof value !== "object" || Array.isArray(value)) return false;
    return (schema.required ?? []).every((k: string) => k in (value as Json) && conforms(schema.properties?.[k], (value as Json)[k]));
  }
  return true;
}

const errorTypeOf = (body: Json): string | undefined => body?.error?.type ?? body?.type ?? body?.scimType ?? body?.detail;

// ------------------------------------------------------------------ input generators

const segment = fc.oneof(
  fc.uuid(),
  fc.string({ minLength: 1, maxLength: 40 }).map((s) => encodeURIComponent(s)),
  // (no dot segments: a client's URL parser resolves them, so the request would leave the operation's path)
  fc.constantFrom("%", "%ff%fe", "%E0%A4%A", "a%00b", "x".repeat(5000), "-1", "0", "null"),
);

const hostileText = fc.oneof(
  fc.string({ maxLength: 200 }),
  fc.constantFrom("", " ", "{", '{"a":', "[1,2", "null", "true", "0", '"s"', "{}", "[]", '{"__proto__":{"x":1}}', "\u0000", '{"a":"\\ud800"}', '{"a":"\\u0000"}'),
  fc.integer({ min: 100, max: 20_000 }).map((d) => '{"a":'.repeat(d) + "1" + "}".repeat(d)),
  fc.integer({ min: 100, max: 20_000 }).map((d) => "[".repeat(d) + "]".repeat(d)),
  fc.integer({ min: 10_000, max: 400_000 }).map((n) => JSON.stringify({ name: "x".repeat(n), template: "y", query: "z" })),
);

/**
 * Values valid for a JSON Schema (the subset TypeBox emits: type, enum/const, anyOf, string
 * bounds and uuid/date-time formats, number bounds, arrays, objects with required properties), so
 * generated requests also get past validation and reach the services.
 */
function valid(schema: Json, depth = 0): fc.Arbitrary<unknown> {
  if (!schema || depth > 6) return fc.constant(null);
  if (schema.$ref) return valid(schemas[String(schema.$ref).split("/").pop()!], depth + 1);
  if ("const" in schema) return fc.constant(schema.const);
  if (Array.isArray(schema.enum)) return fc.constantFrom(...schema.enum);
  const branches = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(branches) && branches.length) return fc.oneof(...branches.map((b: Json) => valid(b, depth + 1)));
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case "string": {
      if (schema.format === "uuid") return fc.uuid();
      if (schema.format === "date-time") return fc.date({ min: new Date("2000-01-01"), max: new Date("2100-01-01"), noInvalidDate: true }).map((d) => d.toISOString());
      if (schema.format === "uri") return fc.webUrl();
      if (schema.format === "email") return fc.emailAddress();
      const min = schema.minLength ?? 0;
      return fc.string({ minLength: min, maxLength: Math.max(min, Math.min(schema.maxLength ?? 40, 40)) });
    }
    case "integer":
      return fc.integer({ min: Math.max(schema.minimum ?? -1000, -(2 ** 31)), max: Math.min(schema.maximum ?? 1000, 2 ** 31) });
    case "number":
      return fc.double({ min: schema.minimum ?? -1000, max: schema.maximum ?? 1000, noNaN: true, noDefaultInfinity: true });
    case "boolean":
      return fc.boolean();
    case "null":
      return fc.constant(null);
    case "array":
      return fc.array(valid(schema.items ?? {}, depth + 1), { minLength: schema.minItems ?? 0, maxLength: Math.max(schema.minItems ?? 0, Math.min(schema.maxItems ?? 3, 3)) });
    case "object": {
      const props: Record<string, Json> = schema.properties ?? {};
      const required = new Set<string>(schema.required ?? []);
      const record = Object.fromEntries(Object.entries(props).map(([k, v]) => [k, valid(v, depth + 1)]));
      return fc.record(record, { requiredKeys: [...required].filter((k) => k in props) });
    }
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

/** JSON values shaped by the declared schema: its properties with values of every type, often wrong */
const shaped = (schema: Json): fc.Arbitrary<unknown> => {
  const props = Object.keys(schema?.properties ?? {});
  if (props.length === 0) return fc.jsonValue({ maxDepth: 4 });
  return fc.dictionary(fc.constantFrom(...props, "unknownField"), fc.oneof(fc.jsonValue({ maxDepth: 3 }), fc.string({ maxLength: 3000 }), fc.integer(), fc.double(), fc.boolean(), fc.constant(null)), { maxKeys: props.length + 1 });
};

const bodyFor = (op: Operation): fc.Arbitrary<string | Uint8Array | undefined> =>
  fc.oneof(
    { weight: 4, arbitrary: valid(op.body).map((v) => JSON.stringify(v)) },
    { weight: 3, arbitrary: shaped(op.body).map((v) => JSON.stringify(v)) },
    { weight: 2, arbitrary: hostileText },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 5 }).map((v) => JSON.stringify(v)) },
    { weight: 1, arbitrary: fc.uint8Array({ minLength: 1, maxLength: 64 }) }, // invalid UTF-8 and binary
    { weight: 1, arbitrary: fc.constant(undefined) },
  );

const queryFor = (op: Operation): fc.Arbitrary<string> =>
  fc
    .array(fc.tuple(fc.constantFrom(...op.query.map((q) => q.name), "x"), fc.oneof(fc.string({ maxLength: 30 }), fc.integer().map(String), fc.constantFrom("-1", "1e30", "99999999999999999999", "%", "true", "abc"))), { maxLength: 4 })
    .map((pairs) => (pairs.length ? "?" + pairs.map(([k, v]) => `${encodeURIComponent(k)}=${v === "%" ? "%" : encodeURIComponent(v)}`).join("&") : ""));

const fill = (path: string, segs: string[]) => {
  let i = 0;
  return path.replace(/\{[^}]+\}/g, () => segs[i++] ?? "x");
};

async function send(op: Operation, segs: string[], query: string, body: string | Uint8Array | undefined, auth: boolean, contentType = "application/json") {
  const headers: Record<string, string> = {};
  if (auth) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers["content-type"] = contentType;
  const hasBody = op.method !== "GET" && op.method !== "HEAD";
  const url = gw.url + fill(op.path, segs) + query;
  const t0 = performance.now();
  const r = await fetch(url, { method: op.method, headers, body: hasBody ? body : undefined });
  const text = await r.text();
  return { status: r.status, text, rid: r.headers.get("x-request-id"), ms: performance.now() - t0, url };
}

/** what every answer must satisfy */
function check(op: Operation, res: Awaited<ReturnType<typeof send>>) {
  const where = `${op.method} ${res.url.slice(gw.url.length, gw.url.length + 120)} -> ${res.status} ${res.text.slice(0, 160)}`;
  expect(res.rid, where).toMatch(RID);
  if (res.status >= 400) {
    let body: Json;
    try {
      body = JSON.parse(res.text);
    } catch {
      throw new Error(`not JSON: ${where}`);
    }
    if (!conforms(op.errorSchemas[String(res.status)] ?? op.errorSchema, body)) throw new Error(`not in the operation's envelope: ${where}`);
    if (res.status >= 500 && !DEPENDENCY_5XX.has(errorTypeOf(body) ?? "")) throw new Error(`internal error: ${where}`);
  }
}

describe("every operation of /openapi.json", () => {
  test("the document lists the operations of every mounted domain", () => {
    expect(ops.length).toBeGreaterThan(30);
    expect(ops.some((o) => o.path === "/v1/chat/completions")).toBe(true);
  });

  test("without a credential: 401 in the operation's envelope before anything else, whatever the input", async () => {
    for (const op of ops.filter((o) => !o.public)) {
      await fc.assert(
        fc.asyncProperty(fc.array(segment, { minLength: 3, maxLength: 3 }), queryFor(op), bodyFor(op), async (segs, query, body) => {
          const res = await send(op, segs, query, body, false);
          check(op, res);
          expect(`${op.method} ${op.path} -> ${res.status}`).toBe(`${op.method} ${op.path} -> 401`);
        }),
        { numRuns: Math.max(2, Math.ceil(RUNS / 3)), seed: SEED },
      );
    }
  }, 120_000);

  test("with a credential: no internal error, every error in the envelope, X-Request-ID on every answer", async () => {
    for (const op of ops) {
      await fc.assert(
        fc.asyncProperty(fc.array(segment, { minLength: 3, maxLength: 3 }), queryFor(op), bodyFor(op), fc.constantFrom("application/json", "text/plain", "application/scim+json"), async (segs, query, body, type) => {
          check(op, await send(op, segs, query, body, true, type));
        }),
        { numRuns: RUNS, seed: SEED },
      );
    }
  }, 180_000);

  test("pathological inputs are answered within a time bound while /health stays responsive", async () => {
    const deep = '{"a":'.repeat(50_000) + "1" + "}".repeat(50_000);
    const wide = JSON.stringify({ items: Array.from({ length: 100_000 }, (_, i) => i) });
    for (const op of ops.filter((o) => o.method !== "GET")) {
      for (const body of [deep, wide]) {
        const [res, health] = await Promise.all([send(op, ["x", "y", "z"], "", body, true), (async () => {
          const t0 = performance.now();
          const r = await fetch(gw.url + "/health");
          return { status: r.status, ms: performance.now() - t0 };
        })()]);
        check(op, res);
        expect(health.status).toBe(200);
        // generous bounds for a loaded 2-core machine; the defect took seconds to minutes
        expect(`${op.method} ${op.path} ${res.ms < 3_000}`).toBe(`${op.method} ${op.path} true`);
        expect(health.ms).toBeLessThan(3_000);
      }
    }
  }, 180_000);
});
