/**
 * The OpenAPI 3.1 document of the whole service, built once from what is mounted: every Elysia
 * route (parameters from its TypeBox schemas through @elysiajs/openapi, the request body from its
 * body schema), every native route a domain documents (the proxies' real path templates), and
 * for each operation the answers of its mount — the success answer, and the errors in the mount's
 * envelope (401 and 429 unless public, 403 where a permission is required, 400, 404, 500).
 */
import type { AnyElysia } from "elysia";
import { toOpenAPISchema } from "@elysiajs/openapi";
import type { TSchema } from "@sinclair/typebox";
import { ApiError, type Envelope } from "./errors";
import type { Kernel, Mount } from "./kernel";

type Json = Record<string, any>;

export interface DocumentedOperation {
  method: string;
  /** OpenAPI path template, e.g. /v1beta/models/{model}:generateContent */
  path: string;
  summary: string;
  description?: string;
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
  /** operations served outside the Elysia app (native routes) */
  operations: DocumentedOperation[];
  /** path prefixes never documented (the docs' own assets) */
  hidden: string[];
}


/** A TypeBox schema as plain JSON Schema (symbols dropped). */
const plain = (s: TSchema): Json => JSON.parse(JSON.stringify(s));

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
    if (!op.summary && route.hooks?.detail?.summary) op.summary = route.hooks.detail.summary;
    const body = route.hooks?.body as TSchema | undefined;
    if (body && typeof body === "object" && Symbol.for("TypeBox.Kind") in body)
      op.requestBody = { required: !((body as unknown as Json)[Symbol.for("TypeBox.Optional") as never] === "Optional"), content: { "application/json": { schema: plain(body) } } };
    const params = [...template.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
    const declared = new Set((op.parameters ?? []).filter((p: Json) => p.in === "path").map((p: Json) => p.name));
    for (const name of params) if (!declared.has(name)) (op.parameters ??= []).push({ name, in: "path", required: true, schema: { type: "string" } });
    const responseType = route.hooks?.detail?.["x-content-type"] ?? "application/json";
    answers(op, input.kernel.mountOf(route.path), { perm: !!route.hooks?.perm, contentType: responseType });
    (paths[template] ??= {})[method] = op;
  }

  for (const o of input.operations) {
    const method = o.method.toLowerCase();
    const params = [...o.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
    const concrete = o.path.replace(/\{(\w+)\}/g, "x");
    const op: Json = {
      summary: o.summary,
      ...(o.description ? { description: o.description } : {}),
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
    answers(op, input.kernel.mountOf(concrete), { perm: false, extra: o.errors, contentType: "application/json" });
    (paths[o.path] ??= {})[method] = op;
  }

  return {
    openapi: "3.1.0",
    info: input.info,
    paths: Object.fromEntries(Object.entries(paths).sort(([a], [b]) => a.localeCompare(b))),
    components: {
      ...(base.components ?? {}),
      schemas,
      securitySchemes: { bearer: { type: "http", scheme: "bearer", bearerFormat: "JWT", description: "An access token (JWT) or an svc API key (svc_...)" } },
    },
    // every route needs a credential unless it says otherwise (ops endpoints, token exchange)
    security: [{ bearer: [] }],
  };
}
