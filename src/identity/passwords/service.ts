/**
 * Password sign-in for users who joined by invitation (no identity provider needed):
 *  - a password is set when an invitation is accepted (or through a reset link): policy.ts rules,
 *    stored as argon2id (Bun.password; memory and time cost from identity.passwords);
 *  - login(email, password[, workspace]) -> the key exchange's token shape, for `user:<id>`: the
 *    user's roles apply per request through the access check (a suspension or role change holds at
 *    once). The answer never tells whether the address exists: an unknown address costs the same
 *    argon2id verification (against a dummy hash) and gets the same 401; failures are counted per
 *    address-of-account and per client address (lockout.ts) whether or not an account exists;
 *  - password reset: a one-time link by e-mail (identity.smtp), valid 30 minutes (reset_ttl_minutes);
 *    the request is answered 202 at once and the mail sent afterwards, so neither the answer nor
 *    its timing says whether the address has an account; using the link voids the user's other links;
 *  - a workspace may turn password sign-in off while an SSO connection is active (settings).
 */
import { createHash, randomBytes } from "node:crypto";
import { ApiError, badRequest, conflict, forbidden, unauthenticated } from "../../core/errors";
import { uuid } from "../../core/ids";
import type { ForTenant } from "../../storage/scoped";
import type { AsyncStorage } from "../../storage/async";
import { fold, iso, type WallClock } from "../types";
import type { TokenMinter } from "../ports";
import type { Mailer } from "../invitations/mail";
import type { UserService } from "../users/service";
import type { IdentityConfig } from "../config";
import { Lockout } from "./lockout";
import { checkPassword } from "./policy";
import { accountsByEmail, resetByHash, type Account, type PasswordStore } from "./store";

export const LOGIN_PATH = "/api/v1/auth/login";
export const RESET_PATH = "/api/v1/auth/password-reset";

export type PasswordSettings = IdentityConfig["passwords"];

export interface LoginAnswer {
  accessToken: string;
  tokenType: "Bearer";
  expiresIn: number;
}

const sha256 = (s: string) => createHash("sha256").update(s).digest("hex");
const INVALID = "invalid e-mail address or password";

export class PasswordService {
  private readonly accountFailures: Lockout;
  private readonly addressFailures: Lockout;
  private readonly accountResets: Lockout;
  private readonly addressResets: Lockout;
  private dummy?: Promise<string>;

  constructor(
    private readonly store: ForTenant<PasswordStore>,
    private readonly storage: AsyncStorage,
    private readonly users: UserService,
    private readonly tokens: TokenMinter,
    private readonly mailer: Mailer | undefined,
    private readonly clock: WallClock,
    private readonly s: PasswordSettings,
    private readonly publicUrl: string | undefined,
    /** whether the workspace has an active SSO connection */
    private readonly ssoActive: (tenantId: string) => Promise<boolean>,
    private readonly warn: (message: string) => void,
  ) {
    const lock = { windowMs: s.lockout_window_secs * 1000, lockMs: s.lockout_secs * 1000 };
    this.accountFailures = new Lockout({ max: s.max_failures_per_account, ...lock }, clock);
    this.addressFailures = new Lockout({ max: s.max_failures_per_address, ...lock }, clock);
    this.accountResets = new Lockout({ max: s.max_resets_per_account, ...lock }, clock);
    this.addressResets = new Lockout({ max: s.max_failures_per_address, ...lock }, clock);
  }

  // ------------------------------------------------------------------ setting a password

  /** whether the workspace signs in with passwords (the operator's default until an admin sets it) */
  async enabledFor(tenantId: string): Promise<boolean> {
    return this.s.enabled && ((await this.store(tenantId).passwordLogin()) ?? true);
  }

  /** the argon2id hash of a password that passes the policy (400 otherwise) */
  async prepare(email: string, password: string): Promise<string> {
    await checkPassword(password, email);
    return this.hash(password);
  }

  /** store a prepared hash (inside the caller's transaction); open reset links stop working */
  async save(tenantId: string, userId: string, hash: string) {
    const s = this.store(tenantId);
    const at = iso(this.clock());
    await s.set(userId, hash, at);
    await s.voidResets(userId, at);
  }

  async hasPassword(tenantId: string, userId: string): Promise<boolean> {
    return (await this.store(tenantId).hashOf(userId)) !== undefined;
  }

  private hash(password: string): Promise<string> {
    return Bun.password.hash(password, { algorithm: "argon2id", memoryCost: this.s.argon2_memory_kib, timeCost: this.s.argon2_time_cost });
  }

  // ------------------------------------------------------------------ sign-in

  async login(input: { email: string; password: string; workspace?: string }, address: string): Promise<LoginAnswer> {
    // the dummy hash exists before any answer is timed (the first sign-in pays for it either way)
    const dummy = await this.dummyHash();
    const account = fold(input.email.trim());
    this.refuseLocked(this.accountFailures.lockedFor(account), this.addressFailures.lockedFor(address), "failed sign-in attempts");
    let found = await accountsByEmail(this.global(), account);
    if (input.workspace !== undefined) found = found.filter((a) => a.tenantId === input.workspace);
    const matches: Account[] = [];
    if (found.length === 0) await Bun.password.verify(input.password, dummy);
    for (const a of found) if (await Bun.password.verify(input.password, a.hash)) matches.push(a);
    if (matches.length === 0) {
      this.accountFailures.fail(account);
      this.addressFailures.fail(address);
      throw unauthenticated(INVALID);
    }
    // only someone who knows the password learns any of the following
    if (matches.length > 1) throw conflict(`this address signs in to several workspaces (${matches.map((m) => m.tenantId).join(", ")}): name one in "workspace"`);
    const m = matches[0]!;
    if (!(await this.enabledFor(m.tenantId))) throw forbidden(`password sign-in is turned off for workspace ${m.tenantId}: sign in through its SSO connection (GET /api/v1/sso/login?email=…)`);
    if (m.status !== "ACTIVE") throw forbidden("the user is suspended");
    this.accountFailures.clear(account);
    const ttl = Math.min(this.s.token_ttl_secs, this.tokens.maxTtlSecs);
    const accessToken = await this.tokens.sign({ tenantId: m.tenantId, sub: `user:${m.userId}`, permissions: [] }, ttl);
    return { accessToken, tokenType: "Bearer", expiresIn: ttl };
  }

  private refuseLocked(accountMs: number, addressMs: number, what: string) {
    const ms = Math.max(accountMs, addressMs);
    if (ms <= 0) return;
    const secs = Math.ceil(ms / 1000);
    const minutes = Math.ceil(secs / 60);
    throw new ApiError(
      "rate_limit_error",
      `too many ${what} for this account or from this address: locked, try again in ${minutes} minute${minutes === 1 ? "" : "s"}`,
      { retry_after_secs: secs },
      { "retry-after": String(secs) },
    );
  }

  /** a hash with the current parameters, so an unknown address costs what a known one does */
  private dummyHash(): Promise<string> {
    this.dummy ??= this.hash(randomBytes(16).toString("hex"));
    return this.dummy;
  }

  private global() {
    return this.storage.global("a sign-in or reset link names an e-mail address or a token, not a workspace");
  }

  // ------------------------------------------------------------------ reset by e-mail

  /** 202 at once, whatever the address; the link goes out afterwards to each matching account */
  async requestReset(input: { email: string; workspace?: string }, address: string, origin: string): Promise<{ accepted: true; message: string }> {
    if (!this.mailer) throw new ApiError("service_unavailable", "password reset needs e-mail delivery, and no SMTP server is configured (identity.smtp.host): ask a workspace admin");
    const account = fold(input.email.trim());
    this.refuseLocked(this.accountResets.lockedFor(account), this.addressResets.lockedFor(address), "password reset requests");
    this.accountResets.fail(account);
    this.addressResets.fail(address);
    const nowMs = this.clock();
    let found = await accountsByEmail(this.global(), account);
    if (input.workspace !== undefined) found = found.filter((a) => a.tenantId === input.workspace);
    for (const a of found) {
      if (a.status !== "ACTIVE" || !(await this.enabledFor(a.tenantId))) continue;
      const token = randomBytes(32).toString("base64url");
      const expires = iso(nowMs + this.s.reset_ttl_minutes * 60_000);
      await this.store(a.tenantId).insertReset({ id: uuid(), tenant_id: a.tenantId, user_id: a.userId, expires_at: expires, used_at: null, created_at: iso(nowMs) }, sha256(token));
      const link = `${(this.publicUrl ?? origin).replace(/\/$/, "")}${RESET_PATH}?token=${token}`;
      const text = [
        `Someone asked to reset the password of ${a.email} in the workspace ${a.tenantId} on svc.`,
        "",
        `Choose a new password: ${link}`,
        `(POST ${RESET_PATH}/confirm with {"token", "password"}; the link works once, until ${expires}.)`,
        "",
        "If it was not you, ignore this message: your password stays as it is.",
      ].join("\n");
      // after the answer: its timing must not say whether the address has an account
      // to the address on record, not as typed (a mailbox's local part may be case-sensitive)
      void this.mailer.send({ to: a.email, subject: `Reset your svc password (${a.tenantId})`, text }).catch((e) => this.warn(`password reset e-mail to ${a.tenantId}/${a.userId} failed: ${String((e as Error)?.message ?? e)}`));
    }
    return { accepted: true, message: `if a user with a password has this address, a link to choose a new one was sent to it; it works once, for ${this.s.reset_ttl_minutes} minutes` };
  }

  /** what a reset link is for (changes nothing: mail scanners follow links) */
  async previewReset(token: string): Promise<{ workspace: string; email: string; expiresAt: string }> {
    const { row, email } = await this.openReset(token);
    return { workspace: row.tenant_id, email, expiresAt: row.expires_at };
  }

  async confirmReset(token: string, password: string): Promise<{ reset: true; workspace: string; email: string }> {
    const { row, email } = await this.openReset(token);
    const hash = await this.prepare(email, password);
    const s = this.store(row.tenant_id);
    await s.db.tx(async () => {
      if (!(await s.useReset(row.id, iso(this.clock())))) throw unauthenticated("invalid, used or expired password reset link");
      await this.save(row.tenant_id, row.user_id, hash);
    });
    this.accountFailures.clear(fold(email));
    return { reset: true, workspace: row.tenant_id, email };
  }

  private async openReset(token: string) {
    const invalid = () => unauthenticated("invalid, used or expired password reset link");
    if (token.length > 128) throw invalid();
    const row = await resetByHash(this.global(), sha256(token));
    if (!row || row.used_at !== null || Date.parse(row.expires_at) <= this.clock()) throw invalid();
    const user = await this.users.get(row.tenant_id, row.user_id);
    if (!user || user.status !== "ACTIVE") throw invalid();
    return { row, email: user.email };
  }

  // ------------------------------------------------------------------ workspace setting

  async settings(tenantId: string): Promise<{ passwordLogin: boolean; ssoActive: boolean }> {
    return { passwordLogin: await this.enabledFor(tenantId), ssoActive: await this.ssoActive(tenantId) };
  }

  async setPasswordLogin(tenantId: string, on: boolean): Promise<{ passwordLogin: boolean; ssoActive: boolean }> {
    if (on && !this.s.enabled) throw badRequest("passwordLogin: password sign-in is turned off for every workspace by the operator (identity.passwords.enabled)");
    if (!on && !(await this.ssoActive(tenantId))) throw conflict("password sign-in can be turned off only while an SSO connection is active (else nobody could sign in)");
    await this.store(tenantId).setPasswordLogin(on, iso(this.clock()));
    return this.settings(tenantId);
  }
}
