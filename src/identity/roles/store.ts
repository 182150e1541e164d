/** Custom roles and role assignments (built-in roles live in code: builtin.ts). */
import type { TenantDb } from "../../storage/scoped";
import type { Listed } from "../../core/pagination";
import { fold, type Role } from "../types";

interface RoleRow {
  id: string;
  name: string;
  description: string;
  permissions: string;
  created_at: string;
  updated_at: string;
}

const roleOf = (r: RoleRow): Role => ({
  id: r.id,
  name: r.name,
  description: r.description,
  permissions: JSON.parse(r.permissions),
  is_system: false,
  created_at: r.created_at,
  updated_at: r.updated_at,
});

export interface AssignmentRow {
  id: string;
  user_id: string;
  role_id: string;
  scope: string;
  expires_at: string | null;
  assigned_by: string | null;
  created_at: string;
}

export interface RoleFilter {
  name?: string;
  permission?: string;
}

export class RoleStore {
  constructor(readonly db: TenantDb) {}

  insert(r: Role) {
    this.db.run(
      `INSERT INTO roles (id, tenant_id, name, name_lower, description, permissions, created_at, updated_at) VALUES ($id, $tenant, $name, $lower, $description, $permissions, $at, $at)`,
      { id: r.id, name: r.name, lower: fold(r.name), description: r.description, permissions: JSON.stringify(r.permissions), at: r.created_at },
    );
  }
  update(r: Role) {
    this.db.run(
      `UPDATE roles SET name = $name, name_lower = $lower, description = $description, permissions = $permissions, updated_at = $at WHERE tenant_id = $tenant AND id = $id`,
      { id: r.id, name: r.name, lower: fold(r.name), description: r.description, permissions: JSON.stringify(r.permissions), at: r.updated_at },
    );
  }
  delete(id: string) {
    this.db.run(`DELETE FROM role_assignments WHERE tenant_id = $tenant AND role_id = $id`, { id });
    this.db.run(`DELETE FROM roles WHERE tenant_id = $tenant AND id = $id`, { id });
  }
  /** whether anyone holds the role (any scope, expired or not) */
  isAssigned(roleId: string): boolean {
    return !!this.db.get<{ one: number }>(`SELECT 1 AS one FROM role_assignments WHERE tenant_id = $tenant AND role_id = $r LIMIT 1`, { r: roleId });
  }
  get(id: string): Role | undefined {
    const r = this.db.get<RoleRow>(`SELECT * FROM roles WHERE tenant_id = $tenant AND id = $id`, { id });
    return r ? roleOf(r) : undefined;
  }
  byName(name: string): Role | undefined {
    const r = this.db.get<RoleRow>(`SELECT * FROM roles WHERE tenant_id = $tenant AND name_lower = $n`, { n: fold(name) });
    return r ? roleOf(r) : undefined;
  }
  byIds(ids: string[]): Role[] {
    if (ids.length === 0) return [];
    return this.db.all<RoleRow>(`SELECT * FROM roles WHERE tenant_id = $tenant AND id IN (SELECT value FROM json_each($ids))`, { ids: JSON.stringify(ids) }).map(roleOf);
  }
  list(f: RoleFilter, limit: number, offset: number): Listed<Role> {
    const where = `tenant_id = $tenant AND ($name IS NULL OR instr(name_lower, $name) > 0)
      AND ($perm IS NULL OR EXISTS (SELECT 1 FROM json_each(roles.permissions) WHERE value = $perm))`;
    const p = { name: f.name ? fold(f.name) : null, perm: f.permission ?? null };
    const total = this.db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM roles WHERE ${where}`, p)!.n;
    const items = this.db.all<RoleRow>(`SELECT * FROM roles WHERE ${where} ORDER BY name_lower, id LIMIT $limit OFFSET $offset`, { ...p, limit, offset }).map(roleOf);
    return { items, total };
  }

  // ---- assignments

  assignment(userId: string, roleId: string, scope: string): AssignmentRow | undefined {
    return this.db.get<AssignmentRow>(`SELECT * FROM role_assignments WHERE tenant_id = $tenant AND user_id = $u AND role_id = $r AND scope = $s`, {
      u: userId,
      r: roleId,
      s: scope,
    });
  }
  insertAssignment(a: AssignmentRow) {
    this.db.run(
      `INSERT INTO role_assignments (id, tenant_id, user_id, role_id, scope, expires_at, assigned_by, created_at) VALUES ($id, $tenant, $u, $r, $s, $exp, $by, $at)`,
      { id: a.id, u: a.user_id, r: a.role_id, s: a.scope, exp: a.expires_at, by: a.assigned_by, at: a.created_at },
    );
  }
  setExpiry(id: string, expiresAt: string | null, by: string | null) {
    this.db.run(`UPDATE role_assignments SET expires_at = $exp, assigned_by = COALESCE($by, assigned_by) WHERE tenant_id = $tenant AND id = $id`, { id, exp: expiresAt, by });
  }
  assignments(userId: string): AssignmentRow[] {
    return this.db.all<AssignmentRow>(`SELECT * FROM role_assignments WHERE tenant_id = $tenant AND user_id = $u ORDER BY created_at, rowid`, { u: userId });
  }
  /** how many rows went */
  revoke(userId: string, roleId: string, scope: string | null): number {
    return this.db.run(`DELETE FROM role_assignments WHERE tenant_id = $tenant AND user_id = $u AND role_id = $r AND ($s IS NULL OR scope = $s)`, {
      u: userId,
      r: roleId,
      s: scope,
    }).changes;
  }
}
