/** Custom roles and role assignments (built-in roles live in code: builtin.ts). */
import type { AsyncTenantDb } from "../../storage/async";
import { likePattern, type Dialect } from "../../storage/dialect";
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
  constructor(
    readonly db: AsyncTenantDb,
    private readonly d: Dialect,
  ) {}

  async insert(r: Role) {
    await this.db.run(
      `INSERT INTO roles (id, tenant_id, name, name_lower, description, permissions, created_at, updated_at) VALUES ($id, $tenant, $name, $lower, $description, $permissions, $at, $at)`,
      { id: r.id, name: r.name, lower: fold(r.name), description: r.description, permissions: JSON.stringify(r.permissions), at: r.created_at },
    );
  }
  async update(r: Role) {
    await this.db.run(
      `UPDATE roles SET name = $name, name_lower = $lower, description = $description, permissions = $permissions, updated_at = $at WHERE tenant_id = $tenant AND id = $id`,
      { id: r.id, name: r.name, lower: fold(r.name), description: r.description, permissions: JSON.stringify(r.permissions), at: r.updated_at },
    );
  }
  async delete(id: string) {
    await this.db.run(`DELETE FROM role_assignments WHERE tenant_id = $tenant AND role_id = $id`, { id });
    await this.db.run(`DELETE FROM roles WHERE tenant_id = $tenant AND id = $id`, { id });
  }
  /** whether anyone holds the role (any scope, expired or not) */
  async isAssigned(roleId: string): Promise<boolean> {
    return !!await this.db.get<{ one: number }>(`SELECT 1 AS one FROM role_assignments WHERE tenant_id = $tenant AND role_id = $r LIMIT 1`, { r: roleId });
  }
  async get(id: string): Promise<Role | undefined> {
    const r = await this.db.get<RoleRow>(`SELECT * FROM roles WHERE tenant_id = $tenant AND id = $id`, { id });
    return r ? roleOf(r) : undefined;
  }
  async byName(name: string): Promise<Role | undefined> {
    const r = await this.db.get<RoleRow>(`SELECT * FROM roles WHERE tenant_id = $tenant AND name_lower = $n`, { n: fold(name) });
    return r ? roleOf(r) : undefined;
  }
  async byIds(ids: string[]): Promise<Role[]> {
    if (ids.length === 0) return [];
    return (await this.db.all<RoleRow>(`SELECT * FROM roles WHERE tenant_id = $tenant AND id IN ${this.d.inJsonArray("$ids")}`, { ids: JSON.stringify(ids) })).map(roleOf);
  }
  async list(f: RoleFilter, limit: number, offset: number): Promise<Listed<Role>> {
    const where = `tenant_id = $tenant AND (CAST($name AS TEXT) IS NULL OR name_lower LIKE $name ESCAPE '\\')
      AND (CAST($perm AS TEXT) IS NULL OR EXISTS (SELECT 1 FROM ${this.d.jsonEach("roles.permissions")} WHERE value = $perm))`;
    const p = { name: f.name ? likePattern(fold(f.name)) : null, perm: f.permission ?? null };
    const total = (await this.db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM roles WHERE ${where}`, p))!.n;
    const items = (await this.db.all<RoleRow>(`SELECT * FROM roles WHERE ${where} ORDER BY name_lower, id LIMIT $limit OFFSET $offset`, { ...p, limit, offset })).map(roleOf);
    return { items, total };
  }

  // ---- assignments

  async assignment(userId: string, roleId: string, scope: string): Promise<AssignmentRow | undefined> {
    return await this.db.get<AssignmentRow>(`SELECT * FROM role_assignments WHERE tenant_id = $tenant AND user_id = $u AND role_id = $r AND scope = $s`, {
      u: userId,
      r: roleId,
      s: scope,
    });
  }
  async insertAssignment(a: AssignmentRow) {
    await this.db.run(
      `INSERT INTO role_assignments (id, tenant_id, user_id, role_id, scope, expires_at, assigned_by, created_at) VALUES ($id, $tenant, $u, $r, $s, $exp, $by, $at)`,
      { id: a.id, u: a.user_id, r: a.role_id, s: a.scope, exp: a.expires_at, by: a.assigned_by, at: a.created_at },
    );
  }
  async setExpiry(id: string, expiresAt: string | null, by: string | null) {
    await this.db.run(`UPDATE role_assignments SET expires_at = $exp, assigned_by = COALESCE($by, assigned_by) WHERE tenant_id = $tenant AND id = $id`, { id, exp: expiresAt, by });
  }
  async assignments(userId: string): Promise<AssignmentRow[]> {
    return await this.db.all<AssignmentRow>(`SELECT * FROM role_assignments WHERE tenant_id = $tenant AND user_id = $u ORDER BY created_at, rowid`, { u: userId });
  }
  /** how many rows went */
  async revoke(userId: string, roleId: string, scope: string | null): Promise<number> {
    const r = await this.db.run(`DELETE FROM role_assignments WHERE tenant_id = $tenant AND user_id = $u AND role_id = $r AND (CAST($s AS TEXT) IS NULL OR scope = $s)`, {
      u: userId,
      r: roleId,
      s: scope,
    });
    return r.changes;
  }
}
