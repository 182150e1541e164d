/**
 * Password sign-in end to end with real SMTP delivery to a loopback sink: an invitation accepted
 * with a password (policy: length, the 10,000 most common, the address), POST /api/v1/auth/login
 * answering the key exchange's token shape and acting with the user's roles, lockout per account
 * and per address without telling whether an address exists (same answer, same argon2id work),
 * password reset by a one-time 30-minute link, password sign-in turned off while SSO is active,
 * and GET /api/v1/permissions/me for every kind of credential.
 */
import { describe, expect, test, beforeAll, afterAll } from "bun:test";
import { startIdentity, expectError, FakeWallClock, type IdentityEnv } from "./helpers";
import { startSmtpSink, type SmtpSink } from "./smtp-sink";

const clock = new FakeWallClock(Date.now());
let env: IdentityEnv;
let sink: SmtpSink;
const LOGIN = "/api/v1/auth/login";
const RESET = "/api/v1/auth/password-reset";
const PW = "correct horse battery staple";
const MAX_PER_ADDRESS = 12;
let editorId: string;

beforeAll(async () => {
  sink = await startSmtpSink();
  env = await startIdentity(
    {
      identity: {
        public_url: "https://svc.example.com",
        smtp: { host: "127.0.0.1", port: sink.port, user: sink.user, password: sink.password, from: "svc <auth@svc.example.com>" },
        // cheap hashes keep the suite fast; the parameters are the operator's
        passwords: { argon2_memory_kib: 8_192, argon2_time_cost: 1, max_failures_per_address: MAX_PER_ADDRESS, forwarded_for_hops: 1 },
      },
    },
    { wallClock: clock.now },
  );
  editorId = (await env.call("GET", "/api/v1/roles?name=editor", env.A)).body.roles[0].id;
});
afterAll(async () => {
  await env.gw.stop();
  await sink.stop();
});

const tokenOf = (link: string) => new URL(link).searchParams.get("token")!;
const login = (json: Record<string, unknown>, forwardedFor?: string) =>
  env.gw.api(LOGIN, { method: "POST", json, headers: forwardedFor ? { "x-forwarded-for": forwardedFor } : {} }).then(async (r) => ({ status: r.status, body: (await r.json()) as any, headers: r.headers }));
/** doc1 envelope: {error: {message, type}} */
const expectDoc1 = (r: { status: number; body: any }, status: number, type: string, contains?: string) => {
  expect({ status: r.status, body: r.body }).toEqual({ status, body: { error: { message: expect.any(String), type, ...(r.body?.error?.retry_after_secs !== undefined ? { retry_after_secs: expect.any(Number) } : {}) } } });
  if (contains) expect(r.body.error.message).toContain(contains);
};

/** invite an address (editor role) and accept with a password; the user's id */
async function invitedUser(email: string, password = PW, name = "Invitee"): Promise<string> {
  const inv = (await env.call("POST", "/api/v1/invitations", env.A, { emails: [email], roleId: editorId })).body.invitations[0];
  const ok = await env.call("POST", "/api/v1/invitations/accept", undefined, { token: tokenOf(inv.link), name, password });
  expect(ok.status).toBe(200);
  expect(ok.body.passwordSet).toBe(true);
  return ok.body.user.id;
}

describe("accepting an invitation sets a password", () => {
  test("required, at least 12 characters, not one of the 10,000 most common, not the address; then signed in with the user's roles", async () => {
    const email = "newcomer@example.com";
    const inv = (await env.call("POST", "/api/v1/invitations", env.A, { emails: [email], roleId: editorId })).body.invitations[0];
    const token = tokenOf(inv.link);
    const accept = (json: Record<string, unknown>) => env.call("POST", "/api/v1/invitations/accept", undefined, { token, ...json });
    expectError(await accept({}), 400, "validation_error", "password: required");
    expectError(await accept({ password: "short-pw" }), 400, "validation_error", "at least 12");
    for (const common of ["qwerty123456", "1QAZ2WSX3EDC", "123qweasdzxc"]) expectError(await accept({ password: common }), 400, "validation_error", "most common");
    expectError(await accept({ password: "newcomer@example.com" }), 400, "validation_error", "e-mail");
    // nothing was accepted by the refusals
    expect((await env.call("GET", `/api/v1/invitations/${inv.id}`, env.A)).body.status).toBe("pending");
    const ok = await accept({ password: PW, name: "New Comer" });
    expect(ok.status).toBe(200);
    expect(ok.body.passwordSet).toBe(true);

    const r = await login({ email: "NewComer@Example.com", password: PW });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ accessToken: expect.any(String), tokenType: "Bearer", expiresIn: 28_800 });
    // the token acts for the user with the editor role (ManageKeys among others) ...
    expect((await env.call("GET", "/api/v1/roles", r.body.accessToken)).status).toBe(200);
    expectError(await env.call("GET", "/api/v1/users", r.body.accessToken), 403, "authorization_error");
    // ... and a role change applies to it at once
    const userId = ok.body.user.id;
    expect((await env.call("DELETE", `/api/v1/users/${userId}/roles/${editorId}`, env.A)).status).toBe(200);
    expectError(await env.call("GET", "/api/v1/roles", r.body.accessToken), 403, "authorization_error");
  }, 30_000);
});

describe("POST /api/v1/auth/login", () => {
  test("a wrong password and an unknown address get the same answer after the same argon2id work", async () => {
    await invitedUser("known@example.com");
    const verify = Bun.password.verify;
    let verifications = 0;
    (Bun.password as { verify: typeof verify }).verify = (...a: Parameters<typeof verify>) => {
      verifications++;
      return verify(...a);
    };
    try {
      const wrong = await login({ email: "known@example.com", password: "not the password at all" }, "198.51.100.1");
      const wrongCount = verifications;
      const unknown = await login({ email: "nobody-here@example.com", password: "not the password at all" }, "198.51.100.1");
      expect(wrong).toMatchObject({ status: 401 });
      expect(unknown.body).toEqual(wrong.body);
      expectDoc1(unknown, 401, "authentication_error", "invalid e-mail address or password");
      expect(wrongCount).toBe(1);
      expect(verifications - wrongCount).toBe(1);
    } finally {
      (Bun.password as { verify: typeof verify }).verify = verify;
    }
    expectDoc1(await login({ email: "known@example.com" }), 400, "validation_error");
  }, 30_000);

  test("five failures lock the account (also an unknown one, identically) with a clear message, even for the right password; it opens again after the lockout", async () => {
    await invitedUser("locked@example.com");
    for (const email of ["locked@example.com", "ghost@example.com"]) {
      for (let i = 0; i < 5; i++) expect((await login({ email, password: `wrong password ${i}!` }, `203.0.113.${i}`)).status).toBe(401);
      const locked = await login({ email, password: PW }, "203.0.113.99");
      expect(locked.status).toBe(429);
      expect(locked.body.error.message).toBe("too many failed sign-in attempts for this account or from this address: locked, try again in 15 minutes");
      expect(locked.headers.get("retry-after")).toBe("900");
    }
    clock.advance(15 * 60_000 + 1_000);
    expect((await login({ email: "locked@example.com", password: PW }, "203.0.113.99")).status).toBe(200);
  }, 30_000);

  test("failures from one address lock that address for every account; other addresses still sign in", async () => {
    await invitedUser("victim@example.com");
    const attacker = "192.0.2.66";
    for (let i = 0; i < MAX_PER_ADDRESS; i++) expect((await login({ email: `spray${i}@example.com`, password: "password spraying" }, attacker)).status).toBe(401);
    expectDoc1(await login({ email: "victim@example.com", password: PW }, attacker), 429, "rate_limit_error", "locked");
    expect((await login({ email: "victim@example.com", password: PW }, "192.0.2.67")).status).toBe(200);
    clock.advance(15 * 60_000 + 1_000);
  }, 30_000);
});

describe("password reset by e-mail", () => {
  test("a one-time link valid 30 minutes; the new password works, the old one not; unknown addresses get the same 202 and no mail", async () => {
    await invitedUser("forgetful@example.com");
    const before = sink.messages.length;
    const r = await env.call("POST", RESET, undefined, { email: "Forgetful@example.com" });
    expect(r.status).toBe(202);
    const unknown = await env.call("POST", RESET, undefined, { email: "stranger@example.com" });
    expect(unknown).toMatchObject({ status: 202, body: r.body });
    // the mail is sent after the answer
    const deadline = Date.now() + 10_000;
    while (sink.messages.length === before && Date.now() < deadline) await Bun.sleep(25);
    const mails = sink.messages.slice(before);
    expect(mails).toHaveLength(1);
    // to the address on record, not as typed
    expect(mails[0]!.to).toEqual(["forgetful@example.com"]);
    const link = /https:\/\/svc\.example\.com\/api\/v1\/auth\/password-reset\?token=[A-Za-z0-9_-]+/.exec(mails[0]!.text)![0];
    const token = tokenOf(link);
    expect((await env.call("GET", `${RESET}?token=${token}`, undefined)).body).toMatchObject({ workspace: "tenant-a", email: "forgetful@example.com" });
    expectError(await env.call("POST", `${RESET}/confirm`, undefined, { token, password: "qwerty123456" }), 400, "validation_error", "most common");
    const NEW = "a brand new passphrase";
    expect((await env.call("POST", `${RESET}/confirm`, undefined, { token, password: NEW })).status).toBe(200);
    expectDoc1(await env.call("POST", `${RESET}/confirm`, undefined, { token, password: "yet another passphrase" }), 401, "authentication_error", "used or expired");
    expect((await login({ email: "forgetful@example.com", password: PW })).status).toBe(401);
    expect((await login({ email: "forgetful@example.com", password: NEW })).status).toBe(200);

    // expired after 30 minutes
    const b2 = sink.messages.length;
    await env.call("POST", RESET, undefined, { email: "forgetful@example.com" });
    while (sink.messages.length === b2 && Date.now() < deadline + 10_000) await Bun.sleep(25);
    const late = tokenOf(/https:\/\/\S+password-reset\?token=[A-Za-z0-9_-]+/.exec(sink.messages.at(-1)!.text)![0]);
    clock.advance(30 * 60_000 + 1_000);
    expectDoc1(await env.call("POST", `${RESET}/confirm`, undefined, { token: late, password: "too late passphrase" }), 401, "authentication_error", "expired");
  }, 30_000);
});

describe("a workspace turns password sign-in off while SSO is active", () => {
  test("409 without an active SSO connection; once off, the right password gets 403 naming SSO, a wrong one the usual 401", async () => {
    await invitedUser("sso-user@example.com");
    expect((await env.call("GET", "/api/v1/auth/settings", env.A)).body).toEqual({ passwordLogin: true, ssoActive: false });
    expectDoc1(await env.call("PUT", "/api/v1/auth/settings", env.A, { passwordLogin: false }), 409, "conflict", "SSO");
    expectDoc1(await env.call("PUT", "/api/v1/auth/settings", env.none, { passwordLogin: false }), 403, "authorization_error");
    // an active connection (its activation steps are sso.test.ts's subject)
    const c = (await env.call("POST", "/api/v1/sso/connections", env.A, { name: "corp", protocol: "oidc", oidcConfig: { issuerUrl: "https://93.184.216.34", clientId: "c", clientSecret: "s" } })).body;
    env.gw.ctx.storage.tenant("tenant-a").run(`UPDATE sso_connections SET status = 'active' WHERE tenant_id = $tenant AND id = $id`, { id: c.id });
    expect((await env.call("PUT", "/api/v1/auth/settings", env.A, { passwordLogin: false })).body).toEqual({ passwordLogin: false, ssoActive: true });
    expectDoc1(await login({ email: "sso-user@example.com", password: PW }), 403, "authorization_error", "SSO");
    expectDoc1(await login({ email: "sso-user@example.com", password: "not the password at all" }), 401, "authentication_error");
    // invitees need no password meanwhile
    const inv = (await env.call("POST", "/api/v1/invitations", env.A, { emails: ["sso-only@example.com"] })).body.invitations[0];
    expect((await env.call("POST", "/api/v1/invitations/accept", undefined, { token: tokenOf(inv.link) })).body.passwordSet).toBe(false);
    expect((await env.call("PUT", "/api/v1/auth/settings", env.A, { passwordLogin: true })).body.passwordLogin).toBe(true);
    expect((await login({ email: "sso-user@example.com", password: PW })).status).toBe(200);
  }, 30_000);
});

describe("GET /api/v1/permissions/me", () => {
  test("a user's token: effective permissions with their sources (credential, roles with scope and expiry)", async () => {
    const userId = await invitedUser("curious@example.com");
    const expiresAt = new Date(clock.ms + 86_400_000).toISOString();
    const viewer = (await env.call("GET", "/api/v1/roles?name=viewer", env.A)).body.roles[0];
    expect((await env.call("POST", `/api/v1/users/${userId}/roles`, env.A, { roleId: viewer.id, expiresAt })).status).toBe(201);
    const token = (await login({ email: "curious@example.com", password: PW })).body.accessToken;
    const me = await env.call("GET", "/api/v1/permissions/me", token);
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ workspace: "tenant-a", subject: `user:${userId}`, user: { id: userId, email: "curious@example.com" } });
    expect(me.body.permissions).toEqual(["ManageConfig", "ManageKeys", "ViewKeys", "ViewLogs", "ViewMetrics"]);
    expect(me.body.sources[0]).toMatchObject({ type: "credential", via: "jwt", permissions: [], expiresAt: expect.any(String) });
    const roles = me.body.sources.filter((s: any) => s.type === "role");
    expect(roles.map((r: any) => [r.role_name, r.expires_at, r.effective])).toEqual(
      expect.arrayContaining([
        ["editor", null, true],
        ["viewer", expiresAt, true],
      ]),
    );
  }, 30_000);

  test("an API key and an admin token: the credential's own permissions; no credential 401", async () => {
    const k = (await env.call("POST", "/api/v1/virtual-keys", env.A, { name: "me-key", permissions: ["ViewMetrics"] })).body;
    const byKey = await env.call("GET", "/api/v1/permissions/me", k.key);
    expect(byKey.body).toMatchObject({ subject: `key:${k.id}`, user: null, permissions: ["ViewMetrics"], sources: [{ type: "credential", via: "api_key", keyId: k.id, permissions: ["ViewMetrics"], expiresAt: null }] });
    const byAdmin = await env.call("GET", "/api/v1/permissions/me", env.A);
    expect(byAdmin.body).toMatchObject({ permissions: ["WorkspaceAdmin"], sources: [{ type: "credential", permissions: ["WorkspaceAdmin"] }] });
    expect((await env.call("GET", "/api/v1/permissions/me", env.none)).body.permissions).toEqual([]);
    expectError(await env.call("GET", "/api/v1/permissions/me", undefined), 401, "authentication_error");
  }, 30_000);
});

describe("the client address", () => {
  test("is the peer address the server saw: a client's own x-svc-peer-address or X-Forwarded-For does not dodge the per-address lockout (no proxies configured)", async () => {
    const own = await startIdentity({ identity: { passwords: { argon2_memory_kib: 8_192, argon2_time_cost: 1, max_failures_per_address: 3 } } });
    try {
      const attempt = (i: number) =>
        own.gw.api(LOGIN, { method: "POST", json: { email: `dodger${i}@example.com`, password: "guessing away" }, headers: { "x-svc-peer-address": `10.9.9.${i}`, "x-forwarded-for": `10.8.8.${i}` } });
      for (let i = 0; i < 3; i++) expect((await attempt(i)).status).toBe(401);
      expect((await attempt(3)).status).toBe(429);
    } finally {
      await own.gw.stop();
    }
  }, 30_000);
});
