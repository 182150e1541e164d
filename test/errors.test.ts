import { describe, expect, test } from "bun:test";
import { ApiError, errorResponse, toApiError, STATUS_OF, forbidden, notFound, DOC1, DOC2, DOC3 } from "../src/core/errors";
import { testKernel } from "./helpers/kernel";

const errorBody = (e: ApiError, family: "core" | "mcp" | "identity") => ({ core: DOC1, mcp: DOC2, identity: DOC3 })[family].body(e);

describe("envelope families", () => {
  test("the mount a path falls under picks the family (longest prefix, at segment boundaries)", () => {
    const { kernel } = testKernel();
    kernel.register({ prefix: "/v1", envelope: DOC1 });
    kernel.register({ prefix: "/api/v1/mcp", envelope: DOC2 });
    kernel.register({ prefix: "/api/v1/tool-cache", envelope: DOC2 });
    kernel.register({ prefix: "/api/v1/teams", envelope: DOC3 });
    kernel.register({ prefix: "/api/v1/scim", envelope: DOC3 });
    kernel.register({ prefix: "/api/v1/scim/v2/special", envelope: DOC2 });
    expect(kernel.envelopeOf("/v1/chat/completions")).toBe(DOC1);
    expect(kernel.envelopeOf("/api/v1/rate-limits")).toBe(DOC1); // no mount: doc1
    expect(kernel.envelopeOf("/api/v1/mcp/servers")).toBe(DOC2);
    expect(kernel.envelopeOf("/api/v1/tool-cache/stats")).toBe(DOC2);
    expect(kernel.envelopeOf("/api/v1/scim/v2/Users")).toBe(DOC3);
    expect(kernel.envelopeOf("/api/v1/scim/v2/special/x")).toBe(DOC2);
    expect(kernel.envelopeOf("/api/v1/teams")).toBe(DOC3);
    expect(kernel.envelopeOf("/api/v1/teamsx")).toBe(DOC1);
    expect(() => kernel.register({ prefix: "/api/v1/teams", envelope: DOC1 })).toThrow(/two mounts/);
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
  test("errorResponse: status, JSON body in the envelope, extra headers", async () => {
    const r = errorResponse(new ApiError("rate_limit_error", "x", { retry_after_secs: 1 }, { "retry-after": "1" }), DOC2, { "x-request-id": "r" });
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
