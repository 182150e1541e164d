/**
 * /api/v1/invitations over HTTP with real SMTP delivery to a loopback sink: create for several
 * addresses (sent/failed with reasons), list with filters, link retrievable by admins, accept
 * (user created or linked, role assigned), resend (new token), revoke, expiry on a fake clock.
 */
import { describe, expect, test, beforeAll, afterAll } from "bun:test";
import { startIdentity, expectError, uuid, FakeWallClock, type IdentityEnv } from "./helpers";
import { startSmtpSink, type SmtpSink } from "./smtp-sink";

const clock = new FakeWallClock();
let env: IdentityEnv;
let sink: SmtpSink;
const I = "/api/v1/invitations";
const ACCEPT = "/api/v1/invitations/accept";
let editorId: string;

beforeAll(async () => {
  sink = await startSmtpSink();
  env = await startIdentity(
    {
      identity: {
        public_url: "https://svc.example.com",
        invitation_ttl_hours: 48,
        smtp: { host: "127.0.0.1", port: sink.port, user: sink.user, password: sink.password, from: "svc <invites@svc.example.com>" },
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
const mailTo = (address: string) => sink.messages.filter((m) => m.to.includes(address));
/** the password invitees choose when they accept */
const PW = "a long enough passphrase";

describe("invitations", () => {
  test("create for several addresses: sent and failed with reasons; e-mail delivered over SMTP with the link and message", async () => {
    const { call, A } = env;
    await call("POST", "/api/v1/users", A, { email: "member@example.com" });
    const r = await call("POST", I, A, {
      emails: ["new1@example.com", "not-an-address", "Member@Example.com", "NEW1@example.com", "new2@example.com"],
      roleId: editorId,
      message: "Welcome to the platform team!",
    });
    expect(r.status).toBe(201);
    expect(r.body.sent).toBe(2);
    expect(r.body.failed).toBe(3);
    expect(r.body.failures).toEqual([
      { email: "not-an-address", reason: "not a valid e-mail address" },
      { email: "Member@Example.com", reason: "already a user of this workspace" },
      { email: "NEW1@example.com", reason: "listed twice in this request" },
    ]);
    const [inv1] = r.body.invitations;
    expect(inv1).toEqual({
      id: expect.any(String),
      email: "new1@example.com",
      roleId: editorId,
      message: "Welcome to the platform team!",
      status: "pending",
      invitedBy: "admin-a",
      expiresAt: new Date(clock.ms + 48 * 3_600_000).toISOString(),
      link: expect.stringMatching(/^https:\/\/svc\.example\.com\/api\/v1\/invitations\/accept\?token=/),
      emailStatus: "sent",
      emailError: null,
      sentAt: expect.any(String),
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
      acceptedAt: null,
      acceptedUserId: null,
      revokedAt: null,
    });
    const mail = mailTo("new1@example.com");
    expect(mail).toHaveLength(1);
    expect(mail[0]!.from).toBe("invites@svc.example.com");
    expect(mail[0]!.text).toContain("Welcome to the platform team!");
    expect(mail[0]!.text).toContain(inv1.link);
    // the link stays retrievable by an admin
    expect((await call("GET", `${I}/${inv1.id}`, A)).body.link).toBe(inv1.link);
    // already pending
    const again = (await call("POST", I, A, { emails: ["new1@example.com"] })).body;
    expect(again).toMatchObject({ sent: 0, failed: 1, failures: [{ email: "new1@example.com", reason: "an invitation to this address is already pending" }] });
  });

  test("accept: the link shows the invitation without changing it; accepting creates the user with the role", async () => {
    const { call, A, gw } = env;
    const inv = (await call("POST", I, A, { emails: ["joiner@example.com"], roleId: editorId })).body.invitations[0];
    const token = tokenOf(inv.link);
    const preview = await call("GET", `${ACCEPT}?token=${encodeURIComponent(token)}`, undefined);
    expect(preview.body).toEqual({ workspace: "tenant-a", email: "joiner@example.com", status: "pending", roleName: "editor", message: null, expiresAt: inv.expiresAt });
    expect((await call("GET", `${I}/${inv.id}`, A)).body.status).toBe("pending");
    const ok = await call("POST", ACCEPT, undefined, { token, name: "Joiner", password: PW });
    expect(ok.status).toBe(200);
    expect(ok.body.workspace).toBe("tenant-a");
    expect(ok.body.user).toMatchObject({ email: "joiner@example.com", name: "Joiner", status: "ACTIVE" });
    expect(ok.body.invitation).toMatchObject({ id: inv.id, status: "accepted", acceptedUserId: ok.body.user.id, link: null });
    const roles = (await call("GET", `/api/v1/users/${ok.body.user.id}/roles`, A)).body.assignments;
    expect(roles.map((x: any) => x.roleName)).toEqual(["editor"]);
    // the new user's token carries the role's permissions
    const userToken = await gw.token("tenant-a", [], `user:${ok.body.user.id}`);
    expect((await call("GET", "/api/v1/roles", userToken)).status).toBe(200);
    expectError(await call("POST", ACCEPT, undefined, { token }), 409, "conflict", "accepted");
    expectError(await call("DELETE", `${I}/${inv.id}`, A), 409, "conflict");
    expectError(await call("POST", `${I}/${inv.id}/resend`, A), 409, "conflict");
    expectError(await call("POST", ACCEPT, undefined, { token: token.slice(0, -2) + "xx" }), 401, "authentication_error");
    expectError(await call("POST", ACCEPT, undefined, { token: `${uuid()}.abc` }), 401, "authentication_error");
    expectError(await call("POST", ACCEPT, undefined, {}), 400, "validation_error", "token");
  });

  test("accept links an existing user with that address", async () => {
    const { call, A } = env;
    const inv = (await call("POST", I, A, { emails: ["later@example.com"] })).body.invitations[0];
    const user = (await call("POST", "/api/v1/users", A, { email: "Later@Example.com" })).body;
    const ok = await call("POST", ACCEPT, undefined, { token: tokenOf(inv.link), password: PW });
    expect(ok.body.user.id).toBe(user.id);
    expect(ok.body.invitation.acceptedUserId).toBe(user.id);
  });

  test("resend: a new token and expiry, delivered again; the old link stops working", async () => {
    const { call, A } = env;
    const inv = (await call("POST", I, A, { emails: ["resend@example.com"] })).body.invitations[0];
    clock.advance(3_600_000);
    const r = await call("POST", `${I}/${inv.id}/resend`, A);
    expect(r.status).toBe(200);
    expect(r.body.link).not.toBe(inv.link);
    expect(r.body.expiresAt).toBe(new Date(clock.ms + 48 * 3_600_000).toISOString());
    expect(mailTo("resend@example.com")).toHaveLength(2);
    expect(mailTo("resend@example.com")[1]!.text).toContain(r.body.link);
    expectError(await call("POST", ACCEPT, undefined, { token: tokenOf(inv.link) }), 401, "authentication_error");
    expect((await call("POST", ACCEPT, undefined, { token: tokenOf(r.body.link), password: PW })).status).toBe(200);
  });

  test("revoke and expiry: both refuse acceptance; an expired invitation can be resent", async () => {
    const { call, A } = env;
    const [a, b] = (await call("POST", I, A, { emails: ["revoke@example.com", "expire@example.com"] })).body.invitations;
    const rv = await call("DELETE", `${I}/${a.id}`, A);
    expect(rv.body).toMatchObject({ id: a.id, status: "revoked", revokedAt: expect.any(String), link: null });
    expect((await call("DELETE", `${I}/${a.id}`, A)).body.status).toBe("revoked");
    expectError(await call("POST", ACCEPT, undefined, { token: tokenOf(a.link) }), 409, "conflict", "revoked");
    expectError(await call("POST", `${I}/${a.id}/resend`, A), 409, "conflict");
    clock.advance(48 * 3_600_000);
    expect((await call("GET", `${I}/${b.id}`, A)).body).toMatchObject({ status: "expired", link: null });
    expectError(await call("POST", ACCEPT, undefined, { token: tokenOf(b.link) }), 409, "conflict", "expired");
    expect((await call("GET", `${I}?status=expired&email=expire%40`, A)).body.invitations.map((x: any) => x.id)).toEqual([b.id]);
    // a new invitation to an address whose invitation expired is allowed, and so is a resend
    const re = await call("POST", `${I}/${b.id}/resend`, A);
    expect(re.body.status).toBe("pending");
    expect((await call("POST", ACCEPT, undefined, { token: tokenOf(re.body.link), password: PW })).status).toBe(200);
  });

  test("list: filters email and status, page_size / pageSize up to 100, newest first", async () => {
    const t = await env.gw.token("tenant-inv-list", ["WorkspaceAdmin"]);
    const { call } = env;
    await call("POST", I, t, { emails: ["l1@example.com", "l2@example.com", "l3@example.com"] });
    const all = (await call("GET", I, t)).body;
    expect(all).toMatchObject({ total: 3, page: 1, pageSize: 20, totalPages: 1 });
    expect(all.invitations.map((x: any) => x.email)).toEqual(["l3@example.com", "l2@example.com", "l1@example.com"]);
    expect((await call("GET", `${I}?page_size=2&page=2`, t)).body).toMatchObject({ total: 3, page: 2, pageSize: 2, invitations: [{ email: "l1@example.com" }] });
    expect((await call("GET", `${I}?pageSize=1`, t)).body.invitations).toHaveLength(1);
    expect((await call("GET", `${I}?email=L2`, t)).body.invitations.map((x: any) => x.email)).toEqual(["l2@example.com"]);
    expect((await call("GET", `${I}?status=pending`, t)).body.total).toBe(3);
    expect((await call("GET", `${I}?status=accepted`, t)).body.total).toBe(0);
    expect((await call("GET", `${I}?page_size=100`, t)).status).toBe(200);
    expectError(await call("GET", `${I}?page_size=101`, t), 400, "validation_error", "page_size");
    expectError(await call("GET", `${I}?pageSize=101`, t), 400, "validation_error", "pageSize");
    expectError(await call("GET", `${I}?page_size=2&pageSize=3`, t), 400, "validation_error");
    expectError(await call("GET", `${I}?status=lost`, t), 400, "validation_error", "status");
  });

  test("validation, 404, 401/403, isolation", async () => {
    const { call, A, B, none } = env;
    expectError(await call("POST", I, A, { emails: [] }), 400, "validation_error", "emails");
    expectError(await call("POST", I, A, { emails: Array.from({ length: 101 }, (_, i) => `m${i}@example.com`) }), 400, "validation_error", "emails");
    expectError(await call("POST", I, A, { emails: ["x@example.com"], message: "m".repeat(2001) }), 400, "validation_error", "message");
    expectError(await call("POST", I, A, { emails: ["x@example.com"], roleId: uuid() }), 404, "not_found", "role");
    expectError(await call("POST", `${I}/${uuid()}/resend`, A), 404, "not_found");
    expectError(await call("DELETE", `${I}/${uuid()}`, A), 404, "not_found");
    expectError(await call("GET", I, undefined), 401, "authentication_error");
    expectError(await call("POST", I, none, { emails: "x" }), 403, "authorization_error");
    const inv = (await call("POST", I, A, { emails: ["iso@example.com"] })).body.invitations[0];
    expectError(await call("GET", `${I}/${inv.id}`, B), 404, "not_found");
    expectError(await call("POST", `${I}/${inv.id}/resend`, B), 404, "not_found");
    expectError(await call("DELETE", `${I}/${inv.id}`, B), 404, "not_found");
    expect((await call("GET", `${I}?email=iso`, B)).body.total).toBe(0);
    // the same address may be invited by another workspace
    expect((await call("POST", I, B, { emails: ["iso@example.com"] })).body.sent).toBe(1);
  });

  test("an unreachable SMTP server: the invitation exists, marked failed, its link retrievable", async () => {
    await sink.stop();
    const { call, A } = env;
    const r = (await call("POST", I, A, { emails: ["offline@example.com"] })).body;
    // the invitation exists, but no e-mail went out: the answer says so
    expect(r).toMatchObject({ sent: 0, created: 1, unsent: 1, failed: 0 });
    expect(r.message).toContain("could not be delivered");
    expect(r.invitations[0]).toMatchObject({ emailStatus: "failed", emailError: expect.any(String), status: "pending", link: expect.any(String) });
    expect((await call("GET", `${I}/${r.invitations[0].id}`, A)).body.emailStatus).toBe("failed");
  });
});
