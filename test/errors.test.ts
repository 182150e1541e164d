import { describe, expect, test } from "bun:test";
import { ApiError, errorBody, errorResponse, familyOf, toApiError, STATUS_OF, forbidden, notFound } from "../src/core/errors";

describe("envelope families", () => {
  test("paths pick the family", () => {
    expect(familyOf("/v1/chat/completions")).toBe("core");
    expect(familyOf("/api/v1/rate-limits")).toBe("core");
    expect(familyOf("/api/v1/mcp/servers")).toBe("mcp");
    expect(familyOf("/api/v1/tool-cache/stats")).toBe("mcp");
    expect(familyOf("/api/v1/scim/v2/Users")).toBe("identity");
    expect(familyOf("/api/v1/teams")).toBe("identity");
    expect(familyOf("/api/v1/teamsx")).toBe("core");
  });
  test("doc1: {error: {message, type}} with retry_after_secs inside error", () => {
    const e = new ApiError("rate_limit_error", "slow down", { retry_after_secs: 3 });
    expect(errorBody(e, "core")).toEqual({ error: { message: "slow down", type: "rate_limit_error", retry_after_secs: 3 } });
    expect(e.status).toBe(429);
  });
  test("doc2: flat {type, message}; 403 is permission_error", () => {
    expect(errorBody(forbidden("no"), "mcp")).toEqual({ type: "permission_error", message: "no" });
    expect(errorBody(notFound("server"), "mcp")).toEqual({ type: "not_found", message: "server not found" });
  });
  test("doc3: {error: {type, message}}", () => {
    expect(errorBody(forbidden("no"), "identity")).toEqual({ error: { type: "authorization_error", message: "no" } });
  });
  test("errorResponse: status, JSON body by path, extra headers", async () => {
    const r = errorResponse(new ApiError("rate_limit_error", "x", { retry_after_secs: 1 }, { "retry-after": "1" }), "/api/v1/mcp/servers", { "x-request-id": "r" });
    expect(r.status).toBe(429);
    expect(r.headers.get("retry-after")).toBe("1");
    expect(r.headers.get("x-request-id")).toBe("r");
    expect(r.headers.get("content-type")).toBe("application/json");
    expect(await r.json()).toEqual({ type: "rate_limit_error", message: "x", retry_after_secs: 1 });
  });
  test("statuses of doc1 §7", () => {
    expect(STATUS_OF).toMatchObject({
      authentication_error: 401, authorization_error: 403, rate_limit_error: 429, validation_error: 400, invalid_request_error: 400,
      not_found: 404, proxy_error: 502, service_unavailable: 503, timeout_error: 504, embedding_error: 503, internal_error: 500,
      configuration_error: 500, database_error: 500,
    });
    expect(new ApiError("invalid_request_error", "big", undefined, undefined, 413).status).toBe(413);
  });
  test("unknown errors become 500 without leaking internals", () => {
    const e = toApiError(new Error("secret stack detail"));
    expect(e.type).toBe("internal_error");
    expect(e.message).toBe("internal error");
    const sql = Object.assign(new Error("no such table"), { name: "SQLiteError" });
    expect(toApiError(sql).type).toBe("database_error");
  });
});
