/**
 * One error type (ApiError) and one place that renders it. The spec has three envelope families:
 *   core     (doc1, default):                {"error": {"message", "type"[, "retry_after_secs"]}}
 *   mcp      (doc2, /api/v1/mcp, /api/v1/tool-cache): {"type", "message"}
 *   identity (doc3, SSO/SCIM/teams/users/...):       {"error": {"type", "message"}}
 * Domain code throws ApiError with a doc1 type; the family of the request path decides the body.
 */

export type ErrorType =
  | "authentication_error"
  | "authorization_error"
  | "rate_limit_error"
  | "validation_error"
  | "invalid_request_error"
  | "not_found"
  | "conflict"
  | "proxy_error"
  | "service_unavailable"
  | "timeout_error"
  | "embedding_error"
  | "internal_error"
  | "configuration_error"
  | "database_error"
  | "discovery_error";

export const STATUS_OF: Record<ErrorType, number> = {
  authentication_error: 401,
  authorization_error: 403,
  rate_limit_error: 429,
  validation_error: 400,
  invalid_request_error: 400,
  not_found: 404,
  conflict: 409,
  proxy_error: 502,
  service_unavailable: 503,
  timeout_error: 504,
  embedding_error: 503,
  internal_error: 500,
  configuration_error: 500,
  database_error: 500,
  discovery_error: 500,
};

export class ApiError extends Error {
  readonly status: number;
  constructor(
    readonly type: ErrorType,
    message: string,
    /** extra fields inside the envelope, e.g. retry_after_secs */
    readonly extra?: Record<string, unknown>,
    /** extra response headers, e.g. Retry-After */
    readonly headers?: Record<string, string>,
    status?: number,
  ) {
    super(message);
    this.status = status ?? STATUS_OF[type];
  }
}

export const badRequest = (message: string) => new ApiError("validation_error", message);
export const invalidRequest = (message: string) => new ApiError("invalid_request_error", message);
export const notFound = (what: string) => new ApiError("not_found", `${what} not found`);
export const unauthenticated = (message = "missing or invalid credentials") => new ApiError("authentication_error", message);
export const forbidden = (message: string) => new ApiError("authorization_error", message);

export type EnvelopeFamily = "core" | "mcp" | "identity";

const IDENTITY_PREFIXES = [
  "/api/v1/sso",
  "/api/v1/scim",
  "/api/v1/teams",
  "/api/v1/users",
  "/api/v1/roles",
  "/api/v1/invitations",
  "/api/v1/permissions",
  "/api/v1/virtual-keys",
];

export function familyOf(pathname: string): EnvelopeFamily {
  if (pathname.startsWith("/api/v1/mcp") || pathname.startsWith("/api/v1/tool-cache")) return "mcp";
  for (const p of IDENTITY_PREFIXES) if (pathname === p || pathname.startsWith(p + "/")) return "identity";
  return "core";
}

/** doc2 names the 403 type differently. */
const MCP_TYPE: Partial<Record<ErrorType, string>> = { authorization_error: "permission_error" };

export function errorBody(err: ApiError, family: EnvelopeFamily): Record<string, unknown> {
  switch (family) {
    case "mcp":
      return { type: MCP_TYPE[err.type] ?? err.type, message: err.message, ...err.extra };
    case "identity":
      return { error: { type: err.type, message: err.message, ...err.extra } };
    default:
      return { error: { message: err.message, type: err.type, ...err.extra } };
  }
}

export function errorResponse(err: ApiError, pathname: string, headers?: Record<string, string>): Response {
  return new Response(JSON.stringify(errorBody(err, familyOf(pathname))), {
    status: err.status,
    headers: { "content-type": "application/json", ...err.headers, ...headers },
  });
}

/**
 * An embedder failure (EmbeddingError, matched by name so core does not import the cache domain)
 * as its 503 embedding_error; undefined for anything else. Proxies, GatewayService and the cache
 * query route all answer it this way.
 */
export function embeddingUnavailable(e: unknown): ApiError | undefined {
  return (e as Error)?.name === "EmbeddingError" ? new ApiError("embedding_error", `embedding service unavailable: ${(e as Error).message}`) : undefined;
}

/** Anything thrown that is not an ApiError becomes a 500 without leaking internals. */
export function toApiError(e: unknown): ApiError {
  if (e instanceof ApiError) return e;
  const name = (e as Error)?.name ?? "";
  if (name === "SQLiteError") return new ApiError("database_error", "database error");
  return new ApiError("internal_error", "internal error");
}
