/** /api/v1/permissions (doc3 §4.7): permission tree and check of a user (WorkspaceAdmin); the caller's own (`/me`, any credential). */
import { decodeJwt } from "jose";
import type { Kernel } from "../../core/kernel";
import { DOC3 } from "../../core/errors";
import * as S from "../schemas";
import { tag } from "../http";
import type { AuditService } from "./service";

export const auditRoutes = (kernel: Kernel, audit: AuditService) =>
  kernel
    .mount({ prefix: "/api/v1/permissions", envelope: DOC3 })
    .get("/me", async ({ principal, request }) => await audit.me(principal, principal.via === "jwt" ? claimsOf(request) : undefined), {
      detail: { summary: "What the caller may do: effective permissions and their sources (the credential, role assignments with scope and expiry)", description: "Answers the caller's effective permissions and where each comes from: the credential itself (an API key's permissions, or a token's claims with its expiry) and, for a token acting for a user, that user's role assignments with their scope and expiry.", ...tag("permissions") },
    })
    .get("/tree", async ({ principal, query }) => await audit.tree(principal.tenantId, query.user_id, query.resource_type), {
      query: S.TreeQuery,
      perm: "WorkspaceAdmin",
      detail: { summary: "A user's roles, their scope and expiry, and the permissions and resource actions they grant", description: "Shows a user's role assignments (scope, expiry, expired or not), the permissions each role grants and the resource actions (read, write, delete on each resource type) those allow; `resource_type` narrows it to one type.", ...tag("permissions") },
    })
    .get("/check", async ({ principal, query }) => await audit.check(principal.tenantId, query), {
      query: S.CheckQuery,
      perm: "WorkspaceAdmin",
      detail: { summary: "Whether a user may perform an action on a resource type, and the roles that grant or do not", description: "Answers whether the user's unexpired role assignments allow `action` on `resource_type` (and on `resource_id` for an assignment scoped to one resource), listing the assignments that grant it and those that do not, with the reason.", ...tag("permissions") },
    });

/** the payload of the bearer token the kernel has already verified (its claims and expiry) */
function claimsOf(request: Request): { permissions?: unknown; exp?: unknown } | undefined {
  const m = /^Bearer\s+(\S+)$/i.exec(request.headers.get("authorization") ?? "");
  if (!m) return undefined;
  try {
    return decodeJwt(m[1]!);
  } catch {
    return undefined;
  }
}
