/**
 * One error type (ApiError) and the spec's three error envelopes. Domain code throws ApiError
 * with a doc1 type; the envelope a response uses is declared by the domain where it mounts its
 * routes (core/kernel.ts), so this file names no path and no domain.
 *   DOC1 (gateway core, proxies, prompts, memory): {"error": {"message", "type"[, "retry_after_secs"]}}
 *   DOC2 (MCP):                                    {"type", "message"}; 403 is `permission_error`
 *   DOC3 (identity):                               {"error": {"type", "message"}}
 * A domain with an envelope of its own (SCIM's error schema) declares another Envelope.
 */
import { StorageUnavailableError } from "../storage/errors";

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
export const conflict = (message: string) => new ApiError("conflict", message);
export const unauthenticated = (message = "missing or invalid credentials") => new ApiError("authentication_error", message);
export const forbidden = (message: string) => new ApiError("authorization_error", message);

/** How a family of endpoints renders an ApiError. */
export interface Envelope {
  readonly name: string;
  readonly contentType: string;
  body(err: ApiError): unknown;
}

export const DOC1: Envelope = {
  name: "doc1",
  contentType: "application/json",
  body: (err) => ({ error: { message: err.message, type: err.type, ...err.extra } }),
};

/** doc2 names the 403 type differently, and §7 knows two 500 types: discovery_error and internal_error. */
const DOC2_TYPE: Partial<Record<ErrorType, string>> = { authorization_error: "permission_error", database_error: "internal_error", configuration_error: "internal_error" };

/** doc2 §7 gives a 400 one type too: `validation_error` ("invalid body or parameters"), malformed JSON included. */
export const DOC2: Envelope = {
  name: "doc2",
  contentType: "application/json",
  body: (err) => ({ type: err.status === 400 ? "validation_error" : (DOC2_TYPE[err.type] ?? err.type), message: err.message, ...err.extra }),
};

/** doc3 §7 gives a 400 one type: `validation_error`, whatever made the request invalid (malformed JSON too). */
export const DOC3: Envelope = {
  name: "doc3",
  contentType: "application/json",
  body: (err) => ({ error: { type: err.status === 400 ? "validation_error" : err.type, message: err.message, ...err.extra } }),
};

export function errorResponse(err: ApiError, envelope: Envelope, headers?: Record<string, string>): Response {
  return new Response(JSON.stringify(envelope.body(err)), {
    status: err.status,
    headers: { "content-type": envelope.contentType, ...err.headers, ...headers },
  });
}

/** Anything thrown that is not an ApiError becomes a 500 without leaking internals. */
export function toApiError(e: unknown): ApiError {
  if (e instanceof ApiError) return e;
  if (e instanceof StorageUnavailableError) {
    // the database is down, restarting or did not answer in time: the client may retry shortly
    const secs = Math.max(1, Math.ceil(e.retryAfterSeconds));
    return new ApiError("service_unavailable", "database unavailable; retry shortly", { retry_after_secs: secs }, { "retry-after": String(secs) });
  }
  const name = (e as Error)?.name ?? "";
  if (name === "SQLiteError") return new ApiError("database_error", "database error");
  return new ApiError("internal_error", "internal error");
}
