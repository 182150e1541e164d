/**
 * Permission audit (doc3 §4.7) over the one permission table (core/permissions.ts) that also
 * authorises requests:
 *  - tree: user → role assignments (scope, expiry, expired) → permissions → the (resource type,
 *    action) pairs each allows; optionally only what touches one resource type;
 *  - check: whether the user's unexpired assignments allow `action` on `resource_type` (and, for
 *    an assignment scoped to one resource, `resource_id`), with the assignments that grant and
 *    those that do not (and why).
 *  - me: what the caller itself may do (any credential): its effective permissions and where each
 *    comes from — the credential (an API key's permissions, a token's claims, with the token's
 *    expiry) and, for a token acting for a user, the user's role assignments (scope, expiry).
 * A workspace-wide assignment (`scope: workspace`) applies to every resource; a scoped one
 * (`<resource_type>:<id>`) only to that resource.
 */
import { pairsOf, permits, type Action, type ResourceType } from "../../core/permissions";
import type { RoleService, Held } from "../roles/service";
import { WORKSPACE_SCOPE } from "../roles/service";
import type { UserService } from "../users/service";
import type { Principal } from "../../core/auth";
import { USER_SUB } from "../access";

export interface RoleRef {
  assignment_id: string;
  role_id: string;
  role_name: string;
  is_system: boolean;
  scope: string;
  expires_at: string | null;
}

export interface Decision extends RoleRef {
  /** the role's permissions that allow it (granted), or why it does not */
  permissions: string[];
  reason: "granted" | "expired" | "out_of_scope" | "no_permission";
}

const refOf = (h: Held): RoleRef => ({
  assignment_id: h.row.id,
  role_id: h.role.id,
  role_name: h.role.name,
  is_system: h.role.is_system,
  scope: h.row.scope,
  expires_at: h.row.expires_at,
});

export class AuditService {
  constructor(
    private readonly users: UserService,
    private readonly roles: RoleService,
  ) {}

  async tree(tenantId: string, userId: string, resourceType?: ResourceType) {
    const user = await this.users.require(tenantId, userId);
    const held = await this.roles.held(tenantId, userId);
    const effective = new Set<string>();
    const roles = held.map((h) => {
      const permissions = h.role.permissions
        .map((p) => ({ permission: p, grants: pairsOf(p).filter((g) => !resourceType || g.resource === resourceType).map((g) => ({ resource_type: g.resource, action: g.action })) }))
        .filter((p) => !resourceType || p.grants.length > 0);
      if (!h.expired && h.row.scope === WORKSPACE_SCOPE) for (const p of permissions) effective.add(p.permission);
      return { ...refOf(h), expired: h.expired, permissions };
    });
    return {
      user_id: user.id,
      email: user.email,
      status: user.status,
      resource_type: resourceType ?? null,
      roles,
      effective_permissions: [...effective].sort(),
    };
  }

  /**
   * The caller's own permissions. `claims`: the verified token's payload (for its own permissions
   * and expiry), absent for an API key or another credential.
   */
  async me(p: Principal, claims?: { permissions?: unknown; exp?: unknown }) {
    const expiresAt = typeof claims?.exp === "number" ? new Date(claims.exp * 1000).toISOString() : null;
    const own = claims ? (Array.isArray(claims.permissions) ? claims.permissions.filter((x): x is string => typeof x === "string") : []) : [...p.permissions];
    const userId = p.sub.startsWith(USER_SUB) ? p.sub.slice(USER_SUB.length) : undefined;
    const user = userId ? await this.users.get(p.tenantId, userId) : undefined;
    const held = user ? await this.roles.held(p.tenantId, user.id) : [];
    const sources = [
      { type: "credential" as const, via: p.via, keyId: p.keyId ?? null, permissions: [...new Set(own)].sort(), expiresAt },
      ...held.map((h) => ({
        type: "role" as const,
        ...refOf(h),
        expired: h.expired,
        // what the assignment adds to the caller's permissions now (a scoped one: only on its resource)
        effective: !h.expired && h.row.scope === WORKSPACE_SCOPE,
        permissions: [...h.role.permissions].sort(),
      })),
    ];
    return {
      workspace: p.tenantId,
      subject: p.sub,
      user: user ? { id: user.id, email: user.email, name: user.name, status: user.status } : null,
      permissions: [...p.permissions].sort(),
      sources,
    };
  }

  async check(tenantId: string, q: { user_id: string; resource_type: ResourceType; action: Action; resource_id?: string }) {
    await this.users.require(tenantId, q.user_id);
    const granted: Decision[] = [];
    const denied: Decision[] = [];
    for (const h of await this.roles.held(tenantId, q.user_id)) {
      const allowing = h.role.permissions.filter((p) => permits(p, q.resource_type, q.action));
      const inScope = h.row.scope === WORKSPACE_SCOPE || (q.resource_id !== undefined && h.row.scope === `${q.resource_type}:${q.resource_id}`);
      const reason = allowing.length === 0 ? "no_permission" : h.expired ? "expired" : !inScope ? "out_of_scope" : "granted";
      (reason === "granted" ? granted : denied).push({ ...refOf(h), permissions: reason === "no_permission" ? h.role.permissions : allowing, reason });
    }
    return {
      allowed: granted.length > 0,
      user_id: q.user_id,
      resource_type: q.resource_type,
      action: q.action,
      resource_id: q.resource_id ?? null,
      granted_by: granted,
      denied_by: denied,
    };
  }
}
