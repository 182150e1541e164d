/** SCIM test support: a SCIM client over fetch (application/scim+json), token creation, the SCIM error check. */
import { expect } from "bun:test";
import type { IdentityEnv } from "./helpers";

export const SCIM_USER = "urn:ietf:params:scim:schemas:core:2.0:User";
export const SCIM_GROUP = "urn:ietf:params:scim:schemas:core:2.0:Group";
export const ENTERPRISE = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User";
export const PATCH_OP = "urn:ietf:params:scim:api:messages:2.0:PatchOp";
export const LIST = "urn:ietf:params:scim:api:messages:2.0:ListResponse";
export const ERROR = "urn:ietf:params:scim:api:messages:2.0:Error";

export async function scimToken(env: IdentityEnv, scopes?: string[], admin = env.A, extra: Record<string, unknown> = {}): Promise<{ id: string; plain: string }> {
  const r = await env.call("POST", "/api/v1/scim/tokens", admin, { name: `idp-${crypto.randomUUID().slice(0, 6)}`, ...(scopes ? { scopes } : {}), ...extra });
  expect(r.status).toBe(201);
  return { id: r.body.token.id, plain: r.body.plainValue };
}

export interface ScimReply {
  status: number;
  body: any;
  type: string | null;
  headers: Headers;
}

export function scimClient(base: string, token: string) {
  return async (method: string, path: string, body?: unknown, raw?: string): Promise<ScimReply> => {
    const r = await fetch(`${base}/scim/v2${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, accept: "application/scim+json", ...(body !== undefined || raw !== undefined ? { "content-type": "application/scim+json" } : {}) },
      body: raw ?? (body === undefined ? undefined : JSON.stringify(body)),
    });
    const text = await r.text();
    return { status: r.status, body: text ? JSON.parse(text) : undefined, type: r.headers.get("content-type"), headers: r.headers };
  };
}

/** a SCIM error: the status, SCIM's error schema and content type, optionally its scimType and a detail substring */
export function expectScimError(r: ScimReply, status: number, scimType?: string, contains?: string) {
  expect(r.status).toBe(status);
  expect(r.type).toContain("application/scim+json");
  expect(r.body).toEqual({ schemas: [ERROR], status: String(status), ...(scimType ? { scimType } : {}), detail: expect.any(String) });
  if (contains) expect(r.body.detail.toLowerCase()).toContain(contains.toLowerCase());
}
