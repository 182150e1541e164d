/**
 * Invitations (doc3 §4.6). One invitation per address; an address fails with a reason when it is
 * not valid, already a user of the workspace, already invited (pending) or repeated in the request.
 * The acceptance token is `<invitation id>.<HMAC(key, id.version)>`: nothing secret is stored,
 * the link can be rebuilt for an admin at any time, and a resend (new version) voids the old one.
 * The link leads to GET /api/v1/invitations/accept?token=… (shows the invitation, changes nothing:
 * mail scanners follow links) and POST /api/v1/invitations/accept {token, name?, password} accepts
 * it: the user is created (or the live user with that address linked), the role assigned, the
 * password set (required while the workspace signs in with passwords: passwords/), the invitation
 * `accepted`. Expired (past `expiresAt`), revoked or already accepted invitations are refused.
 * The create answer counts what happened: `sent` e-mails the SMTP server accepted, `unsent`
 * invitations whose e-mail did not go out (SMTP not configured, or delivery failed) with a
 * `message` saying so, `failed` addresses that got no invitation.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import { ApiError, badRequest, conflict, notFound } from "../../core/errors";
import { uuid } from "../../core/ids";
import type { Listed } from "../../core/pagination";
import type { ForTenant } from "../../storage/scoped";
import type { AsyncStorage } from "../../storage/async";
import { fold, iso, type InvitationStatus, type User, type WallClock } from "../types";
import { validEmail, type UserService } from "../users/service";
import type { RoleService } from "../roles/service";
import { ownerOf, type EmailStatus, type InvitationRow, type InvitationStore } from "./store";
import type { Mailer } from "./mail";
import type { PasswordService } from "../passwords/service";

export const INVITATION_LIMITS = { emails: 100, message: 2_000 } as const;
export const ACCEPT_PATH = "/api/v1/invitations/accept";

export interface Invitation {
  id: string;
  email: string;
  roleId: string | null;
  message: string | null;
  status: InvitationStatus;
  invitedBy: string | null;
  expiresAt: string;
  /** the acceptance link (pending invitations only): deliver it by hand when e-mail is not configured or failed */
  link: string | null;
  emailStatus: EmailStatus;
  emailError: string | null;
  sentAt: string;
  createdAt: string;
  updatedAt: string;
  acceptedAt: string | null;
  acceptedUserId: string | null;
  revokedAt: string | null;
}

export interface InviteResult {
  invitations: Invitation[];
  failures: Array<{ email: string; reason: string }>;
  /** invitation e-mails the SMTP server accepted */
  sent: number;
  /** addresses that got no invitation (see failures) */
  failed: number;
  /** invitations created */
  created: number;
  /** invitations created whose e-mail did not go out: hand their `link` to the invitee */
  unsent: number;
  /** what happened to the e-mail when not every invitation was sent, else null */
  message: string | null;
}


export class InvitationService {
  constructor(
    private readonly store: ForTenant<InvitationStore>,
    private readonly storage: AsyncStorage,
    private readonly users: UserService,
    private readonly roles: RoleService,
    private readonly passwords: PasswordService,
    private readonly mailer: Mailer | undefined,
    private readonly key: Uint8Array,
    private readonly ttlMs: number,
    private readonly publicUrl: string | undefined,
    private readonly clock: WallClock,
  ) {}

  /** `origin`: where the caller reached the gateway (links use the configured public URL first) */
  async create(tenantId: string, input: { emails: string[]; roleId?: string | null; message?: string | null }, by: string | undefined, origin: string): Promise<InviteResult> {
    if (input.emails.length < 1 || input.emails.length > INVITATION_LIMITS.emails) throw badRequest(`emails: 1 to ${INVITATION_LIMITS.emails} addresses`);
    if (input.message != null && input.message.length > INVITATION_LIMITS.message) throw badRequest(`message: at most ${INVITATION_LIMITS.message} characters`);
    if (input.roleId != null) await this.roles.require(tenantId, input.roleId);
    const s = this.store(tenantId);
    const out: InviteResult = { invitations: [], failures: [], sent: 0, failed: 0, created: 0, unsent: 0, message: null };
    const seen = new Set<string>();
    const created: InvitationRow[] = [];
    for (const raw of input.emails) {
      const email = raw.trim();
      // checked outside the transaction: its body may run again (PostgreSQL) and must not see its own effects
      const invalid = !validEmail(email) ? "not a valid e-mail address" : seen.has(fold(email)) ? "listed twice in this request" : undefined;
      if (invalid) {
        out.failures.push({ email: raw, reason: invalid });
        continue;
      }
      seen.add(fold(email));
      const reason = await s.db.tx(async () => {
        if (await this.users.findByEmail(tenantId, email)) return "already a user of this workspace";
        const nowMs = this.clock();
        if (await s.pendingFor(email, iso(nowMs))) return "an invitation to this address is already pending";
        const at = iso(nowMs);
        const row: InvitationRow = {
          id: uuid(),
          email,
          role_id: input.roleId ?? null,
          message: input.message ?? null,
          status: "pending",
          token_version: 1,
          invited_by: by ?? null,
          expires_at: iso(nowMs + this.ttlMs),
          email_status: this.mailer ? "sent" : "not_configured",
          email_error: null,
          sent_at: at,
          created_at: at,
          updated_at: at,
          accepted_at: null,
          accepted_user_id: null,
          revoked_at: null,
        };
        await s.insert(row);
        return row;
      });
      if (typeof reason === "string") out.failures.push({ email: raw, reason });
      else created.push(reason);
    }
    for (const row of created) {
      const delivered = await this.deliver(tenantId, row, origin);
      await s.delivery(row.id, delivered.status, delivered.error);
      out.invitations.push(this.view({ ...row, email_status: delivered.status, email_error: delivered.error }, origin));
    }
    out.created = out.invitations.length;
    out.sent = out.invitations.filter((i) => i.emailStatus === "sent").length;
    out.unsent = out.created - out.sent;
    out.failed = out.failures.length;
    if (out.unsent > 0)
      out.message = !this.mailer
        ? `no e-mail was sent: no SMTP server is configured (identity.smtp.host); give each invitee the link in invitations[].link`
        : `${out.unsent} of ${out.created} invitation e-mails could not be delivered (see invitations[].emailError); give those invitees the link in invitations[].link or resend`;
    return out;
  }

  async list(tenantId: string, q: { email?: string; status?: InvitationStatus; offset: number; limit: number }, origin: string): Promise<Listed<Invitation>> {
    const { items, total } = await this.store(tenantId).list({ email: q.email, status: q.status }, iso(this.clock()), q.limit, q.offset);
    return { items: items.map((r) => this.view(r, origin)), total };
  }

  async get(tenantId: string, id: string, origin: string): Promise<Invitation> {
    return this.view(await this.row(tenantId, id), origin);
  }

  /** a new token and expiry, delivered again; accepted or revoked invitations cannot be resent (409) */
  async resend(tenantId: string, id: string, origin: string): Promise<Invitation> {
    const s = this.store(tenantId);
    const row = await this.row(tenantId, id);
    if (row.status !== "pending") throw conflict(`invitation is ${row.status}; only pending or expired invitations can be resent`);
    const nowMs = this.clock();
    const next: InvitationRow = { ...row, token_version: row.token_version + 1, expires_at: iso(nowMs + this.ttlMs), sent_at: iso(nowMs), updated_at: iso(nowMs) };
    const delivered = await this.deliver(tenantId, next, origin);
    await s.resent(id, next.token_version, next.expires_at, delivered.status, delivered.error, next.sent_at);
    return this.view({ ...next, email_status: delivered.status, email_error: delivered.error }, origin);
  }

  /** revoke (idempotent); an accepted invitation cannot be revoked (409) */
  async revoke(tenantId: string, id: string, origin: string): Promise<Invitation> {
    const s = this.store(tenantId);
    const row = await s.db.tx(async () => {
      const r = await this.row(tenantId, id);
      if (r.status === "accepted") throw conflict("invitation was already accepted");
      if (r.status === "revoked") return r;
      const at = iso(this.clock());
      await s.revoke(id, at);
      return { ...r, status: "revoked" as const, revoked_at: at, updated_at: at };
    });
    return this.view(row, origin);
  }

  /** What a token's link shows (nothing changes). */
  async preview(token: string): Promise<{ workspace: string; email: string; status: InvitationStatus; roleName: string | null; message: string | null; expiresAt: string }> {
    const { tenantId, row } = await this.byToken(token);
    const role = row.role_id ? await this.roles.get(tenantId, row.role_id) : undefined;
    return { workspace: tenantId, email: row.email, status: this.statusOf(row), roleName: role?.name ?? null, message: row.message, expiresAt: row.expires_at };
  }

  /**
   * Accept: the user is created or linked, the role assigned, the password set, the invitation
   * accepted. A password is required while the workspace signs in with passwords (400 otherwise).
   */
  async accept(token: string, input: { name?: string | null; password?: string }): Promise<{ workspace: string; user: User; invitation: Invitation; passwordSet: boolean }> {
    const { tenantId, row } = await this.byToken(token);
    if (this.statusOf(row) !== "pending") throw conflict(`invitation is ${this.statusOf(row)}; it can no longer be accepted`);
    if (input.password === undefined && (await this.passwords.enabledFor(tenantId)))
      throw badRequest("password: required — choose the password you will sign in with (POST /api/v1/auth/login), at least 12 characters");
    // hashed before the transaction (argon2id takes a while and runs off the event loop)
    const hash = input.password === undefined ? undefined : await this.passwords.prepare(row.email, input.password);
    const s = this.store(tenantId);
    return s.db.tx(async () => {
      const current = await this.row(tenantId, row.id);
      const status = this.statusOf(current);
      if (status !== "pending") throw conflict(`invitation is ${status}; it can no longer be accepted`);
      if (current.token_version !== row.token_version) throw new ApiError("authentication_error", "invalid or superseded invitation token");
      const user = (await this.users.findByEmail(tenantId, current.email)) ?? (await this.users.create(tenantId, { email: current.email, name: input.name ?? null }));
      if (current.role_id && (await this.roles.get(tenantId, current.role_id))) await this.roles.assign(tenantId, user.id, { roleId: current.role_id }, current.invited_by ?? undefined);
      if (hash) await this.passwords.save(tenantId, user.id, hash);
      const at = iso(this.clock());
      await s.accept(current.id, user.id, at);
      return {
        workspace: tenantId,
        user,
        invitation: this.view({ ...current, status: "accepted", accepted_at: at, accepted_user_id: user.id, updated_at: at }, ""),
        passwordSet: hash !== undefined,
      };
    });
  }

  // ------------------------------------------------------------------ internals

  private async row(tenantId: string, id: string): Promise<InvitationRow> {
    const r = await this.store(tenantId).get(id);
    if (!r) throw notFound("invitation");
    return r;
  }

  private statusOf(r: InvitationRow): InvitationStatus {
    return r.status === "pending" && Date.parse(r.expires_at) <= this.clock() ? "expired" : r.status;
  }

  private tokenOf(r: InvitationRow): string {
    return `${r.id}.${createHmac("sha256", this.key).update(`${r.id}.${r.token_version}`).digest("base64url")}`;
  }

  private linkOf(r: InvitationRow, origin: string): string {
    return `${(this.publicUrl ?? origin).replace(/\/$/, "")}${ACCEPT_PATH}?token=${this.tokenOf(r)}`;
  }

  /** The invitation a token names, in its workspace; 401 for a token that is not (or no longer) valid. */
  private async byToken(token: string): Promise<{ tenantId: string; row: InvitationRow }> {
    const invalid = () => new ApiError("authentication_error", "invalid or superseded invitation token");
    const dot = token.indexOf(".");
    const id = token.slice(0, dot);
    if (dot < 0 || !/^[0-9a-f-]{36}$/.test(id)) throw invalid();
    const owner = await ownerOf(this.storage.global("a presented invitation token names its workspace"), id);
    if (!owner) throw invalid();
    const row = (await this.store(owner.tenantId).get(id))!;
    const expected = Buffer.from(this.tokenOf(row));
    const given = Buffer.from(token);
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) throw invalid();
    return { tenantId: owner.tenantId, row };
  }

  private async deliver(tenantId: string, r: InvitationRow, origin: string): Promise<{ status: EmailStatus; error: string | null }> {
    if (!this.mailer) return { status: "not_configured", error: null };
    const link = this.linkOf(r, origin);
    const text = [
      `You have been invited to the workspace ${tenantId} on svc.`,
      ...(r.message ? ["", r.message] : []),
      "",
      `Accept the invitation: ${link}`,
      "",
      `The link is valid until ${r.expires_at}.`,
    ].join("\n");
    try {
      await this.mailer.send({ to: r.email, subject: `Invitation to ${tenantId}`, text });
      return { status: "sent", error: null };
    } catch (e) {
      return { status: "failed", error: String((e as Error)?.message ?? e).slice(0, 500) };
    }
  }

  private view(r: InvitationRow, origin: string): Invitation {
    const status = this.statusOf(r);
    return {
      id: r.id,
      email: r.email,
      roleId: r.role_id,
      message: r.message,
      status,
      invitedBy: r.invited_by,
      expiresAt: r.expires_at,
      link: status === "pending" && origin ? this.linkOf(r, origin) : null,
      emailStatus: r.email_status,
      emailError: r.email_error,
      sentAt: r.sent_at,
      createdAt: r.created_at,
      updatedAt: r.updated_at,
      acceptedAt: r.accepted_at,
      acceptedUserId: r.accepted_user_id,
      revokedAt: r.revoked_at,
    };
  }
}
