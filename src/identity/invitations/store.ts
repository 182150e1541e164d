/** invitations rows; the one cross-workspace read is the owner of a presented invitation token. */
import type { AsyncSql, AsyncTenantDb } from "../../storage/async";
import { likePattern } from "../../storage/dialect";
import type { Listed } from "../../core/pagination";
import { fold, type InvitationStatus } from "../types";

/** Stored statuses; `expired` is derived from `expires_at` (see effective status). */
export type StoredStatus = "pending" | "accepted" | "revoked";

export interface InvitationRow {
  id: string;
  email: string;
  role_id: string | null;
  message: string | null;
  status: StoredStatus;
  token_version: number;
  invited_by: string | null;
  expires_at: string;
  email_status: EmailStatus;
  email_error: string | null;
  sent_at: string;
  created_at: string;
  updated_at: string;
  accepted_at: string | null;
  accepted_user_id: string | null;
  revoked_at: string | null;
}

/** `sent` (handed to the SMTP server), `failed` (it refused or was unreachable), `not_configured` (no SMTP: deliver the link by hand) */
export type EmailStatus = "sent" | "failed" | "not_configured";

/** SQL of the effective status: a pending invitation past its expiry is expired */
const EFFECTIVE = `CASE WHEN status = 'pending' AND expires_at <= $now THEN 'expired' ELSE status END`;

export class InvitationStore {
  constructor(readonly db: AsyncTenantDb) {}

  async insert(r: InvitationRow) {
    await this.db.run(
      `INSERT INTO invitations (id, tenant_id, email, email_lower, role_id, message, status, token_version, invited_by, expires_at, email_status, email_error, sent_at, created_at, updated_at)
       VALUES ($id, $tenant, $email, $lower, $role, $message, $status, $version, $by, $expires, $estatus, $eerror, $sent, $created, $updated)`,
      {
        id: r.id,
        email: r.email,
        lower: fold(r.email),
        role: r.role_id,
        message: r.message,
        status: r.status,
        version: r.token_version,
        by: r.invited_by,
        expires: r.expires_at,
        estatus: r.email_status,
        eerror: r.email_error,
        sent: r.sent_at,
        created: r.created_at,
        updated: r.updated_at,
      },
    );
  }
  async get(id: string): Promise<InvitationRow | undefined> {
    return await this.db.get<InvitationRow>(`SELECT * FROM invitations WHERE tenant_id = $tenant AND id = $id`, { id });
  }
  /** a pending, unexpired invitation of this address */
  async pendingFor(email: string, now: string): Promise<InvitationRow | undefined> {
    return await this.db.get<InvitationRow>(`SELECT * FROM invitations WHERE tenant_id = $tenant AND email_lower = $e AND status = 'pending' AND expires_at > $now LIMIT 1`, {
      e: fold(email),
      now,
    });
  }
  async list(f: { email?: string; status?: InvitationStatus }, now: string, limit: number, offset: number): Promise<Listed<InvitationRow>> {
    const where = `tenant_id = $tenant AND (CAST($email AS TEXT) IS NULL OR email_lower LIKE $email ESCAPE '\\') AND (CAST($status AS TEXT) IS NULL OR ${EFFECTIVE} = $status)`;
    const p = { email: f.email ? likePattern(fold(f.email)) : null, status: f.status ?? null, now };
    const total = (await this.db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM invitations WHERE ${where}`, p))!.n;
    const items = await this.db.all<InvitationRow>(`SELECT * FROM invitations WHERE ${where} ORDER BY created_at DESC, rowid DESC LIMIT $limit OFFSET $offset`, { ...p, limit, offset });
    return { items, total };
  }
  async resent(id: string, version: number, expiresAt: string, emailStatus: EmailStatus, emailError: string | null, at: string) {
    await this.db.run(
      `UPDATE invitations SET token_version = $v, expires_at = $exp, email_status = $es, email_error = $ee, sent_at = $at, updated_at = $at WHERE tenant_id = $tenant AND id = $id`,
      { id, v: version, exp: expiresAt, es: emailStatus, ee: emailError, at },
    );
  }
  async delivery(id: string, emailStatus: EmailStatus, emailError: string | null) {
    await this.db.run(`UPDATE invitations SET email_status = $es, email_error = $ee WHERE tenant_id = $tenant AND id = $id`, { id, es: emailStatus, ee: emailError });
  }
  async revoke(id: string, at: string) {
    await this.db.run(`UPDATE invitations SET status = 'revoked', revoked_at = $at, updated_at = $at WHERE tenant_id = $tenant AND id = $id`, { id, at });
  }
  async accept(id: string, userId: string, at: string) {
    await this.db.run(`UPDATE invitations SET status = 'accepted', accepted_at = $at, accepted_user_id = $u, updated_at = $at WHERE tenant_id = $tenant AND id = $id`, {
      id,
      u: userId,
      at,
    });
  }
}

/** The workspace of a presented invitation token (its id is in the token; ids are globally unique). */
export async function ownerOf(global: AsyncSql, id: string): Promise<{ tenantId: string } | undefined> {
  const r = await global.get<{ tenant_id: string }>(`SELECT tenant_id FROM invitations WHERE id = $id`, { id });
  return r ? { tenantId: r.tenant_id } : undefined;
}
