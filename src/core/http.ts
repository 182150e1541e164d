/**
 * The HTTP kernel shared by every domain: request id, error envelopes, auth macro.
 * Domains build their routes as `new Elysia().use(kernel(ctx))...` and declare
 * `{ auth: true }` or `{ auth: "ViewMetrics" }` on routes that need a caller.
 */
import { Elysia } from "elysia";
import { ApiError, errorResponse, toApiError, familyOf } from "./errors";
import { requirePermission, type Permission, type Principal } from "./auth";
import type { AppContext } from "../context";

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** X-Request-ID: echo a valid incoming UUID, otherwise a new one. */
export function requestIdOf(request: Request): string {
  const incoming = request.headers.get("x-request-id");
  return incoming && UUID_RE.test(incoming) ? incoming : crypto.randomUUID();
}

/**
 * Elysia validates coerced query parameters one by one and reports them as type "property" with
 * no path; name the parameter by finding which query value failed.
 */
function queryParamOf(error: any, request: Request): string | undefined {
  if (error.type !== "property") return undefined;
  const params = new URL(request.url).searchParams;
  for (const [k, v] of params) if (v === String(error.value)) return k;
  return undefined;
}

/**
 * TypeBox reports a failed union as "Expected union value". Say what was expected instead:
 * the allowed values of an enum-like union, or the type of a coerced query/number union.
 */
function unionExpectation(schema: any): string | undefined {
  const branches: any[] | undefined = schema?.anyOf;
  if (!Array.isArray(branches) || branches.length === 0) return undefined;
  if (branches.every((b) => b && "const" in b)) return `Expected one of ${branches.map((b) => JSON.stringify(b.const)).join(", ")}`;
  const kinds = new Set(branches.map((b) => (b?.type === "string" && b.format ? b.format : b?.type)));
  if (kinds.size === 1) {
    const kind = [...kinds][0];
    if (kind === "integer" || kind === "number" || kind === "boolean") {
      const range = [schema.minimum ?? branches.find((b) => b.minimum !== undefined)?.minimum, schema.maximum ?? branches.find((b) => b.maximum !== undefined)?.maximum];
      const bounds = range[0] !== undefined && range[1] !== undefined ? ` from ${range[0]} to ${range[1]}` : range[0] !== undefined ? ` >= ${range[0]}` : range[1] !== undefined ? ` <= ${range[1]}` : "";
      return `Expected ${kind === "integer" ? "an integer" : `a ${kind}`}${bounds}`;
    }
  }
  return undefined;
}

/** Turn Elysia's validation error into a one-line human message. */
function validationMessage(error: any, request: Request): string {
  try {
    const first = error.all?.[0] ?? error.valueError;
    if (first) {
      const message = (first.message === "Expected union value" && unionExpectation(first.schema)) || first.message;
      const param = queryParamOf(error, request);
      if (param) return `query field '${param}': ${message}`;
      const path = String(first.path ?? "").replace(/^\//, "").replace(/\//g, ".") || error.type;
      const summary = !first.summary || /should be one of/.test(first.summary) ? message : first.summary;
      return `${error.type ?? "request"} ${path ? `field '${path}'` : ""}: ${summary}`.replace(/\s+/g, " ").trim();
    }
  } catch {}
  return "invalid request";
}

export function mapError(code: string | number, error: unknown, request: Request, log?: AppContext["log"]): Response {
  const path = new URL(request.url).pathname;
  let err: ApiError;
  if (error instanceof ApiError) err = error;
  else if (code === "VALIDATION") err = new ApiError("validation_error", validationMessage(error, request));
  else if (code === "PARSE") err = new ApiError("invalid_request_error", "malformed request body: expected valid JSON");
  else if (code === "NOT_FOUND") err = new ApiError("not_found", `no route for ${request.method} ${path}`);
  else {
    err = toApiError(error);
    log?.error("unhandled error", { path, error: String((error as Error)?.stack ?? error) });
  }
  return errorResponse(err, path);
}

/**
 * Auth macro: `auth: true` authenticates, `auth: "Perm"` also requires a permission.
 * The resolved principal is available to the handler as `principal`.
 * Rate limiting of the principal's tenant happens here too (see ctx.rateLimiter).
 */
export const kernel = (ctx: AppContext) =>
  new Elysia({ name: "svc-kernel" }).macro({
    auth(perm: true | Permission) {
      return {
        async resolve({ request, set }): Promise<{ principal: Principal }> {
          const principal = await ctx.auth.authenticate(request);
          if (perm !== true) requirePermission(principal, perm);
          ctx.rateLimiter?.enforce(principal, request, set.headers as Record<string, string>);
          return { principal };
        },
      };
    },
  });

export { familyOf, UUID_RE };

/**
 * 413 in the path's envelope: the body is larger than server.max_body_bytes. Counted in the
 * metrics and the request log like any other response (no route matched yet).
 */
export function tooLarge(request: Request, maxBody: number, observer?: AppContext["requests"]): Response {
  const err = new ApiError("invalid_request_error", `request body exceeds ${maxBody} bytes`, undefined, undefined, 413);
  const requestId = requestIdOf(request);
  observer?.start(request);
  observer?.finish({ request, route: undefined, status: 413, requestId });
  return errorResponse(err, new URL(request.url).pathname, { "x-request-id": requestId });
}

/**
 * Serve a request under the body limit. A declared Content-Length is checked without reading and
 * without an extra await (the proxies' hot path); a body without one (chunked) is read up to the
 * limit and served as a buffered copy of the request. Too large: 413 in the path's envelope.
 */
export function withBodyLimit(
  request: Request,
  maxBody: number,
  serve: (request: Request) => Response | Promise<Response>,
  observer?: AppContext["requests"],
): Response | Promise<Response> {
  const len = request.headers.get("content-length");
  if (len !== null) return Number(len) > maxBody ? tooLarge(request, maxBody, observer) : serve(request);
  if (!request.body) return serve(request);
  return readChunked(request, maxBody).then((buffered) => (buffered ? serve(buffered) : tooLarge(request, maxBody, observer)));
}

async function readChunked(request: Request, maxBody: number): Promise<Request | null> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = request.body!.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBody) {
      void reader.cancel().catch(() => {});
      return null;
    }
    chunks.push(value);
  }
  return new Request(request.url, { method: request.method, headers: request.headers, body: Buffer.concat(chunks), signal: request.signal });
}
