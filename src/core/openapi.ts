/**
 * The OpenAPI 3.1 document of the whole service, built once from what is mounted: every Elysia
 * route (parameters from its TypeBox schemas through @elysiajs/openapi, the request body from its
 * body schema), every native route a domain documents (the proxies' real path templates), and
 * for each operation the answers of its mount — the success answer, and the errors in the mount's
 * envelope (401 and 429 unless public, 403 where a permission is required, 400, 404, 500).
 *
 * The reference a newcomer reads: each operation has one tag of the capabilities' list (the
 * document's top-level `tags`, in order, each described), a summary, and a description — what the
 * operation does, written where the route is declared (`detail.description`, or the native
 * route's docs), then who may call it, derived here once from the route's mount (auth policy) and
 * its `perm`, so the two cannot drift apart. The main operations carry request and response
 * examples (`...examples({ request, response })` in the route's `detail`).
 */
import type { AnyElysia } from "elysia";
import { toOpenAPISchema } from "@elysiajs/openapi";
import type { TSchema } from "@sinclair/typebox";
import { ApiError, type Envelope } from "./errors";
import { PERM, type Kernel, type Mount } from "./kernel";
import { PERMISSIONS, type Permission } from "./auth";
import { implies } from "./permissions";

type Json = Record<string, any>;

/** Request and response examples of an operation (Swagger UI shows them; test/openapi-docs.test.ts validates them). */
export interface Examples {
  /** a request body */
  request?: unknown;
  /** the answer's body */
  response?: unknown;
  /** the answer's status (default 200) */
  status?: number;
}

/** Examples on an Elysia route: `detail: { summary, description, ...examples({ request, response }) }`. */
export const examples = (e: Examples) => ({ "x-examples": e });

/** A tag of the document's top-level list: one per capability, in the order /docs shows them. */
export interface TagDoc {
  name: string;
  description: string;
}

/** The paragraph every operation's description ends with: who may call it (derived here, never written by hand). */
export const ACCESS_PREFIX = "**Access:** ";

/** An AuthPolicy of a domain's own credential says what it is (`Object.assign(fn, { credential })`), for the reference. */
export interface DescribedAuth {
  /** e.g. "a SCIM token (Authorization: Bearer; created with POST /api/v1/scim/tokens)" */
  credential?: string;
}

export interface DocumentedOperation {
  method: string;
  /** OpenAPI path template, e.g. /v1beta/models/{model}:generateContent */
  path: string;
  summary: string;
  /** what the operation does (one or two sentences); who may call it is appended from its mount and `perm` */
  description?: string;
  /** the permission the native handler checks (the same constant the domain's route table uses) */
  perm?: Permission;
  examples?: Examples;
  body?: TSchema;
  tags?: string[];
  /** streamed answers (media type of the stream) */
  stream?: "sse" | "ndjson" | "json-array";
  /** extra error statuses this operation answers (e.g. 502/503/504 for upstream calls) */
  errors?: number[];
  /**
   * statuses whose body is not the mount's envelope but a protocol's own (e.g. JSON-RPC errors of
   * the MCP endpoint): the schema is registered under `name` in components
   */
  errorBodies?: { statuses: number[]; name: string; description: string; schema: Json };
}

export interface OpenApiInput {
  app: AnyElysia;
  kernel: Kernel;
  info: { title: string; version: string; description: string };
  /** the capabilities' tags, in order, each with a description */
  tags: TagDoc[];
  /** operations served outside the Elysia app (native routes) */
  operations: DocumentedOperation[];
  /** path prefixes never documented (the docs' own assets) */
  hidden: string[];
}


/** A TypeBox schema as plain JSON Schema (symbols dropped). */
const plain = (s: TSchema): Json => JSON.parse(JSON.stringify(s));

/**
 * OpenAPI 3.0's `nullable` beside a union that already admits null (Elysia's t.Nullable writes
 * both): 3.1 is JSON Schema 2020-12, where the keyword means nothing and validators reject it
 * without a `type`; the union says it.
 */
function without30Nullable(v: unknown): void {
  if (Array.isArray(v)) return v.forEach(without30Nullable);
  if (!v || typeof v !== "object") return;
  const o = v as Json;
  const union = o.anyOf ?? o.oneOf;
  if (o.nullable === true && Array.isArray(union) && union.some((s: Json) => s?.type === "null")) delete o.nullable;
  for (const k in o) without30Nullable(o[k]);
}

const toTemplate = (path: string) => (path.replace(/:(\w+)/g, "{$1}").replace(/\/$/, "") || "/");

const STATUS_TEXT: Record<number, string> = {
  400: "Invalid request (validation_error: a field breaks the schema or a limit; invalid_request_error: the body is not JSON)",
  401: "Missing or invalid credentials (authentication_error)",
  403: "The credential lacks a permission",
  404: "Unknown resource (not_found)",
  409: "Conflict",
  413: "Request body too large",
  429: "Rate limited (rate_limit_error, retry after retry_after_secs)",
  431: "Request headers too large",
  500: "Internal error",
  502: "Upstream failed (proxy_error)",
  503: "Unavailable (service_unavailable, embedding_error); retryable",
  504: "Upstream timed out (timeout_error)",
};

/** The body schema of an envelope, from a sample error rendered through it. */
function envelopeSchema(envelope: Envelope): Json {
  const sample = envelope.body(new ApiError("not_found", "x"));
  const shape = (v: unknown): Json =>
    Array.isArray(v)
      ? { type: "array", items: v.length ? shape(v[0]) : {} }
      : v && typeof v === "object"
      ? { type: "object", required: Object.keys(v), properties: Object.fromEntries(Object.entries(v).map(([k, x]) => [k, shape(x)])), additionalProperties: true }
      : { type: "string" };
  return shape(sample);
}

/** Who may call an operation, from its mount's auth policy and the route's `perm`. */
export function accessOf(mount: Mount, perm: Permission | undefined): string {
  if (perm) {
    const also = PERMISSIONS.filter((p) => p !== perm && implies(new Set([p]), perm)).map((p) => `\`${p}\``);
    return `${ACCESS_PREFIX}needs the \`${perm}\` permission${also.length ? ` (${also.join(" and ")} include${also.length === 1 ? "s" : ""} it)` : ""}, held by the credential or granted through a role.`;
  }
  if (mount.auth === "public") return `${ACCESS_PREFIX}public: no svc API key or access token needed.`;
  if (mount.auth === "bearer") return `${ACCESS_PREFIX}any credential of the tenant (an svc API key or an access token in \`Authorization: Bearer\`); no permission needed.`;
  if (mount.auth === "sdk")
    return `${ACCESS_PREFIX}any credential of the tenant (an svc API key or an access token), wherever the provider's SDK sends its key: \`Authorization: Bearer\`, \`x-api-key\`, \`x-goog-api-key\` or \`?key=\`; no permission needed.`;
  const credential = (mount.auth as DescribedAuth).credential;
  if (!credential) throw new Error(`mount ${mount.prefix}: an auth policy of its own must say what credential it takes (DescribedAuth)`);
  return `${ACCESS_PREFIX}${credential}.`;
}

/** The permission an Elysia route declares (`perm:`, carried by its transform). */
function permOf(hooks: Json | undefined): Permission | undefined {
  const transforms = [hooks?.transform ?? []].flat() as Array<Json>;
  return transforms.map((f) => f[PERM as never] ?? f.fn?.[PERM as never]).find((p) => p !== undefined);
}

/** What the operation does, then who may call it. */
const describe = (what: string | undefined, access: string) => (what ? `${what.trim()}\n\n${access}` : access);

/** Put an operation's examples on its request body and its answer. */
function withExamples(op: Json, e: Examples | undefined) {
  if (!e) return;
  if (e.request !== undefined) {
    const media = (op.requestBody ??= { required: true, content: { "application/json": { schema: {} } } }).content["application/json"];
    if (media) media.example = e.request;
  }
  if (e.response !== undefined) {
    const status = String(e.status ?? 200);
    const answer = ((op.responses ??= {})[status] ??= { description: status === "201" ? "Created" : "OK", content: { "application/json": { schema: {} } } });
    ((answer.content ??= {})["application/json"] ??= { schema: {} }).example = e.response;
  }
}

export function buildOpenApi(input: OpenApiInput): Json {
  const hidden = (path: string) => input.hidden.some((h) => path === h || path.startsWith(h + "/"));
  const base = toOpenAPISchema(input.app, { paths: input.hidden.map((h) => new RegExp(`^${h.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}(/|$)`)) }, undefined, undefined, "3.1.0") as Json;
  const paths: Json = {};
  const schemas: Json = { ...(base.components?.schemas ?? {}) };
  const errorRef = (envelope: Envelope) => {
    const name = `Error_${envelope.name}`;
    schemas[name] ??= envelopeSchema(envelope);
    return { $ref: `#/components/schemas/${name}` };
  };
  const answers = (op: Json, mount: Mount, opts: { perm: boolean; extra?: number[]; contentType: string }) => {
    const responses: Json = op.responses ?? {};
    if (!Object.keys(responses).some((s) => s.startsWith("2"))) responses["200"] = { description: "OK", content: { [opts.contentType]: { schema: {} } } };
    const statuses = [400, 404, 500, ...(opts.extra ?? [])];
    if (mount.auth !== "public") statuses.push(401, 429);
    if (opts.perm) statuses.push(403);
    for (const s of statuses.sort()) responses[String(s)] ??= { description: STATUS_TEXT[s] ?? "Error", content: { [mount.envelope.contentType]: { schema: errorRef(mount.envelope) } } };
    op.responses = responses;
    if (mount.auth === "public") op.security = [];
    else if (typeof mount.auth === "function") op.security = [{ bearer: [] }];
  };

  for (const route of input.app.routes as Array<{ method: string; path: string; hooks?: Json }>) {
    const template = toTemplate(route.path);
    if (hidden(template) || route.hooks?.detail?.hide) continue;
    const method = route.method.toLowerCase();
    const op: Json = { ...(base.paths?.[template]?.[method] ?? base.paths?.[route.path]?.[method] ?? {}) };
    // the generator skips some paths (e.g. /Users/.search): the route's own detail then
    const detail: Json = route.hooks?.detail ?? {};
    if (!op.summary && detail.summary) op.summary = detail.summary;
    if (!op.tags && detail.tags) op.tags = detail.tags;
    const mount = input.kernel.mountOf(route.path);
    const perm = permOf(route.hooks);
    const ex = detail["x-examples"] as Examples | undefined;
    delete op["x-examples"];
    delete op["x-content-type"];
    op.description = describe(detail.description, accessOf(mount, perm));
    const body = route.hooks?.body as TSchema | undefined;
    if (body && typeof body === "object" && Symbol.for("TypeBox.Kind") in body)
      op.requestBody = { required: !((body as unknown as Json)[Symbol.for("TypeBox.Optional") as never] === "Optional"), content: { "application/json": { schema: plain(body) } } };
    const params = [...template.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
    const declared = new Set((op.parameters ?? []).filter((p: Json) => p.in === "path").map((p: Json) => p.name));
    for (const name of params) if (!declared.has(name)) (op.parameters ??= []).push({ name, in: "path", required: true, schema: { type: "string" } });
    const responseType = route.hooks?.detail?.["x-content-type"] ?? "application/json";
    withExamples(op, ex);
    answers(op, mount, { perm: !!perm, contentType: responseType });
    (paths[template] ??= {})[method] = op;
  }

  for (const o of input.operations) {
    const method = o.method.toLowerCase();
    const params = [...o.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
    const concrete = o.path.replace(/\{(\w+)\}/g, "x");
    const mount = input.kernel.mountOf(concrete);
    const op: Json = {
      summary: o.summary,
      description: describe(o.description, accessOf(mount, o.perm)),
      ...(o.tags ? { tags: o.tags } : {}),
      operationId: `${method}${o.path.replace(/[^A-Za-z0-9]+(\w)?/g, (_, c: string | undefined) => (c ? c.toUpperCase() : ""))}`,
      ...(params.length ? { parameters: params.map((name) => ({ name, in: "path", required: true, schema: { type: "string" } })) } : {}),
      ...(o.body ? { requestBody: { required: true, content: { "application/json": { schema: plain(o.body) } } } } : {}),
      responses: {
        "200": {
          description: o.stream ? `The provider's answer; with \`stream: true\` a stream (${o.stream})` : "The provider's answer",
          content: {
            "application/json": { schema: {} },
            ...(o.stream === "sse" ? { "text/event-stream": { schema: { type: "string" } } } : {}),
            ...(o.stream === "ndjson" ? { "application/stream+json": { schema: { type: "string" } } } : {}),
          },
        },
      },
    };
    if (o.errorBodies) {
      const { statuses, name, description, schema } = o.errorBodies;
      schemas[name] ??= schema;
      for (const st of statuses) op.responses[String(st)] = { description, content: { "application/json": { schema: { $ref: `#/components/schemas/${name}` } } } };
    }
    withExamples(op, o.examples);
    answers(op, mount, { perm: !!o.perm, extra: o.errors, contentType: "application/json" });
    (paths[o.path] ??= {})[method] = op;
  }

  without30Nullable(paths);
  without30Nullable(schemas);
  return {
    openapi: "3.1.0",
    info: input.info,
    tags: input.tags,
    paths: Object.fromEntries(Object.entries(paths).sort(([a], [b]) => a.localeCompare(b))),
    components: {
      ...(base.components ?? {}),
      schemas,
      securitySchemes: {
        bearer: {
          type: "http",
          scheme: "bearer",
          bearerFormat: "JWT",
          description:
            "An svc API key (svc_…: `svc keys create --tenant T --name N`, or POST /api/v1/virtual-keys) or an access token (JWT) from POST /api/v1/auth/token or /api/v1/auth/login",
        },
      },
    },
    // every route needs a credential unless it says otherwise (ops endpoints, token exchange)
    security: [{ bearer: [] }],
  };
}
