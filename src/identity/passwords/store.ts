/**
 * Password rows: user_passwords (one argon2id hash per user), password_resets (one-time links, by
 * the SHA-256 of their token), identity_settings (whether the workspace allows password sign-in).
 * Tenant-scoped, except the two lookups a sign-in or a reset link starts from: the users with an
 * e-mail address across workspaces, and a reset token by its hash (it names its workspace).
 */
import type { AsyncSql, AsyncTenantDb } from "../../storage/async";

export interface ResetRow {
  id: string;
  tenant_id: string;
  user_id: string;
  expires_at: string;
  used_at: string | null;
  created_at: string;
}

export class PasswordStore {
  constructor(readonly db: AsyncTenantDb) {}

  async hashOf(userId: string): Promise<string | undefined> {
    return (await this.db.get<{ hash: string }>(`SELECT hash FROM user_passwords WHERE tenant_id = $tenant AND user_id = $u`, { u: userId }))?.hash;
  }

  async set(userId: string, hash: string, at: string) {
    await this.db.run(
      `INSERT INTO user_passwords (tenant_id, user_id, hash, updated_at) VALUES ($tenant, $u, $h, $at)
       ON CONFLICT (tenant_id, user_id) DO UPDATE SET hash = excluded.hash, updated_at = excluded.updated_at`,
      { u: userId, h: hash, at },
    );
  }

  async insertReset(r: ResetRow, tokenHash: string) {
    await this.db.run(`INSERT INTO password_resets (id, tenant_id, user_id, token_hash, expires_at, created_at) VALUES ($id, $tenant, $u, $h, $exp, $at)`, {
      id: r.id,
      u: r.user_id,
      h: tokenHash,
      exp: r.expires_at,
      at: r.created_at,
    });
  }

  /** marks the link used; false when it was already used */
  async useReset(id: string, at: string): Promise<boolean> {
    return (await this.db.run(`UPDATE password_resets SET used_at = $at WHERE tenant_id = $tenant AND id = $id AND used_at IS NULL`, { id, at })).changes > 0;
  }

  /** every other open link of the user stops working (a password was set) */
  async voidResets(userId: string, at: string) {
    await this.db.run(`UPDATE password_resets SET used_at = $at WHERE tenant_id = $tenant AND user_id = $u AND used_at IS NULL`, { u: userId, at });
  }

  async passwordLogin(): Promise<boolean | undefined> {
    const r = await this.db.get<{ password_login: number }>(`SELECT password_login FROM identity_settings WHERE tenant_id = $tenant`);
    return r ? r.password_login === 1 : undefined;
  }

  async setPasswordLogin(on: boolean, at: string) {
    await this.db.run(
      `INSERT INTO identity_settings (tenant_id, password_login, updated_at) VALUES ($tenant, $on, $at)
       ON CONFLICT (tenant_id) DO UPDATE SET password_login = excluded.password_login, updated_at = excluded.updated_at`,
      { on: on ? 1 : 0, at },
    );
  }
}

export interface Account {
  tenantId: string;
  userId: string;
  /** the address as the user record spells it */
  email: string;
  status: string;
  hash: string;
}

/** the live users with this (folded) e-mail and a password, in every workspace (a sign-in names no workspace) */
export async function accountsByEmail(global: AsyncSql, emailLower: string): Promise<Account[]> {
  return global.all<Account>(
    `SELECT u.tenant_id AS "tenantId", u.id AS "userId", u.email AS email, u.status AS status, p.hash AS hash
       FROM users u JOIN user_passwords p ON p.tenant_id = u.tenant_id AND p.user_id = u.id
      WHERE u.email_lower = $e AND u.deleted_at IS NULL
      ORDER BY u.tenant_id LIMIT 20`,
    { e: emailLower },
  );
}

/** the reset link a token names, by the token's hash */
export async function resetByHash(global: AsyncSql, tokenHash: string): Promise<ResetRow | undefined> {
  return global.get<ResetRow>(`SELECT id, tenant_id, user_id, expires_at, used_at, created_at FROM password_resets WHERE token_hash = $h`, { h: tokenHash });
}
