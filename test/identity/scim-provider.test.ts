/**
 * The SCIM 2.0 service provider at /scim/v2 as identity providers drive it: scripted provisioning
 * sessions in the shapes Microsoft Entra ID and Okta send (discovery, filter-before-create,
 * create, PATCH with capitalised ops, filtered `members[value eq "…"]` paths and string booleans,
 * PUT, excludedAttributes=members, deactivate, delete) ending with the user's svc token refused;
 * filters, paging and attribute selection; SCIM's error schema; scopes; isolation.
 */
import { describe, expect, test, beforeAll, afterAll } from "bun:test";
import { startIdentity, expectError, uuid, type IdentityEnv } from "./helpers";
import { ENTERPRISE, LIST, PATCH_OP, SCIM_GROUP, SCIM_USER, expectScimError, scimClient, scimToken } from "./scim-helpers";

let env: IdentityEnv;
const ALL = ["users:read", "users:write", "groups:read", "groups:write"];
const KEYS = "/api/v1/virtual-keys";
beforeAll(async () => (env = await startIdentity()));
afterAll(() => env.gw.stop());

const f = (filter: string) => `filter=${encodeURIComponent(filter)}`;

/** a token acting for the user (what SSO sign-in issues), with the viewer role so it can read keys */
async function userToken(tenant: string, admin: string, userId: string) {
  const viewer = (await env.call("GET", "/api/v1/roles?name=viewer", admin)).body.roles[0];
  expect((await env.call("POST", `/api/v1/users/${userId}/roles`, admin, { roleId: viewer.id })).status).toBe(201);
  return env.gw.token(tenant, [], `user:${userId}`);
}

describe("discovery", () => {
  test("ServiceProviderConfig, ResourceTypes and Schemas in application/scim+json", async () => {
    const scim = scimClient(env.gw.url, (await scimToken(env, ["users:read"])).plain);
    const spc = await scim("GET", "/ServiceProviderConfig");
    expect(spc.status).toBe(200);
    expect(spc.type).toBe("application/scim+json");
    expect(spc.body).toMatchObject({
      schemas: ["urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig"],
      patch: { supported: true },
      filter: { supported: true, maxResults: 200 },
      bulk: { supported: false },
      sort: { supported: true },
      etag: { supported: false },
      changePassword: { supported: false },
      authenticationSchemes: [{ type: "oauthbearertoken", name: "OAuth Bearer Token" }],
      meta: { resourceType: "ServiceProviderConfig", location: `${env.gw.url}/scim/v2/ServiceProviderConfig` },
    });
    const rt = (await scim("GET", "/ResourceTypes")).body;
    expect(rt.schemas).toEqual([LIST]);
    expect(rt.Resources.map((r: any) => [r.id, r.endpoint, r.schema])).toEqual([
      ["User", "/Users", SCIM_USER],
      ["Group", "/Groups", SCIM_GROUP],
    ]);
    expect(rt.Resources[0].schemaExtensions).toEqual([{ schema: ENTERPRISE, required: false }]);
    expect((await scim("GET", "/ResourceTypes/User")).body.endpoint).toBe("/Users");
    expectScimError(await scim("GET", "/ResourceTypes/Printer"), 404);
    const schemas = (await scim("GET", "/Schemas")).body.Resources.map((s: any) => s.id);
    expect(schemas).toEqual(expect.arrayContaining([SCIM_USER, SCIM_GROUP, ENTERPRISE]));
    expect((await scim("GET", `/Schemas/${SCIM_USER}`)).body.attributes.map((a: any) => a.name)).toContain("userName");
  });
});

describe("an Entra ID provisioning session", () => {
  test("filter, create with string booleans and the enterprise extension, PATCH Replace/Add, groups with members, excludedAttributes=members, deactivate, delete — the user's token refused", async () => {
    const scim = scimClient(env.gw.url, (await scimToken(env, ALL)).plain);
    const upn = `alice.${uuid().slice(0, 6)}@contoso.test`;
    // Entra checks first whether the user exists
    const none = await scim("GET", `/Users?${f(`userName eq "${upn}"`)}`);
    expect(none.body).toEqual({ schemas: [LIST], Resources: [], totalResults: 0, startIndex: 1, itemsPerPage: 0 });
    // create, booleans as strings
    const created = await scim("POST", "/Users", {
      schemas: [SCIM_USER, ENTERPRISE],
      externalId: "0d4c7b1e-entra-object",
      userName: upn,
      active: "True",
      displayName: "Alice Entra",
      emails: [{ primary: "true", type: "work", value: upn }],
      name: { formatted: "Alice Entra", familyName: "Entra", givenName: "Alice" },
      title: "Engineer",
      [ENTERPRISE]: { employeeNumber: "701", department: "R&D" },
    });
    expect(created.status).toBe(201);
    expect(created.type).toBe("application/scim+json");
    const id = created.body.id;
    expect(created.headers.get("location")).toBe(`${env.gw.url}/scim/v2/Users/${id}`);
    expect(created.body).toEqual({
      schemas: [SCIM_USER, ENTERPRISE],
      id,
      externalId: "0d4c7b1e-entra-object",
      userName: upn,
      name: { formatted: "Alice Entra", familyName: "Entra", givenName: "Alice" },
      displayName: "Alice Entra",
      title: "Engineer",
      active: true,
      emails: [{ value: upn, type: "work", primary: true }],
      [ENTERPRISE]: { employeeNumber: "701", department: "R&D" },
      meta: { resourceType: "User", created: expect.any(String), lastModified: expect.any(String), location: `${env.gw.url}/scim/v2/Users/${id}` },
    });
    // it is a part-1 user
    const user = (await env.call("GET", `/api/v1/users/${id}`, env.A)).body;
    expect(user).toMatchObject({ email: upn, name: "Alice Entra", external_id: "0d4c7b1e-entra-object", identity_provider: "scim", status: "ACTIVE" });
    const token = await userToken("tenant-a", env.A, id);
    expect((await env.call("GET", KEYS, token)).status).toBe(200);
    // found by the filter Entra uses now
    const found = (await scim("GET", `/Users?${f(`userName eq "${upn.toUpperCase()}"`)}`)).body;
    expect(found.totalResults).toBe(1);
    expect(found.Resources[0].id).toBe(id);
    // PATCH as Entra sends it: capitalised ops, a filtered path, a string boolean
    const patched = await scim("PATCH", `/Users/${id}`, {
      schemas: [PATCH_OP],
      Operations: [
        { op: "Replace", path: "displayName", value: "Alice E. Entra" },
        { op: "Replace", path: 'emails[type eq "work"].value', value: `renamed.${upn}` },
        { op: "Add", path: "name.givenName", value: "Alicia" },
        { op: "Replace", path: `${ENTERPRISE}:department`, value: "Platform" },
        { op: "Replace", path: "active", value: "True" },
      ],
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ displayName: "Alice E. Entra", emails: [{ value: `renamed.${upn}`, type: "work", primary: true }], name: { givenName: "Alicia" }, active: true });
    expect(patched.body[ENTERPRISE]).toEqual({ employeeNumber: "701", department: "Platform" });
    expect((await env.call("GET", `/api/v1/users/${id}`, env.A)).body).toMatchObject({ email: `renamed.${upn}`, name: "Alice E. Entra" });
    // a group with the member, as Entra creates it (members added by PATCH afterwards)
    const gname = `Engineering ${uuid().slice(0, 6)}`;
    expect((await scim("GET", `/Groups?${f(`displayName eq "${gname}"`)}&excludedAttributes=members`)).body.totalResults).toBe(0);
    const g = await scim("POST", "/Groups", { schemas: [SCIM_GROUP], externalId: "grp-entra-1", displayName: gname, members: [] });
    expect(g.status).toBe(201);
    expect(g.body).toEqual({ schemas: [SCIM_GROUP], id: expect.any(String), externalId: "grp-entra-1", displayName: gname, members: [], meta: expect.objectContaining({ resourceType: "Group" }) });
    const gid = g.body.id;
    const add = await scim("PATCH", `/Groups/${gid}`, { schemas: [PATCH_OP], Operations: [{ op: "Add", path: "members", value: [{ value: id }] }] });
    expect(add.status).toBe(200);
    expect(add.body.members).toEqual([{ value: id, display: `renamed.${upn}`, type: "User" }]);
    // the team has the member
    expect((await env.call("GET", `/api/v1/teams/${gid}/members`, env.A)).body).toEqual({ teamId: gid, userIds: [id], total: 1 });
    expect((await env.call("GET", `/api/v1/teams/${gid}`, env.A)).body).toMatchObject({ name: gname, externalId: "grp-entra-1" });
    // the user shows the group
    expect((await scim("GET", `/Users/${id}`)).body.groups).toEqual([{ value: gid, display: gname }]);
    // Entra reads groups without members
    const lean = (await scim("GET", `/Groups/${gid}?excludedAttributes=members`)).body;
    expect(lean.members).toBeUndefined();
    expect(lean.displayName).toBe(gname);
    expect((await scim("GET", `/Groups?excludedAttributes=members&${f(`displayName eq "${gname}"`)}`)).body.Resources[0].members).toBeUndefined();
    // rename with Replace without a path
    expect((await scim("PATCH", `/Groups/${gid}`, { schemas: [PATCH_OP], Operations: [{ op: "Replace", value: { displayName: `${gname} (renamed)` } }] })).body.displayName).toBe(`${gname} (renamed)`);
    // remove the member by a filtered path
    const rm = await scim("PATCH", `/Groups/${gid}`, { schemas: [PATCH_OP], Operations: [{ op: "Remove", path: `members[value eq "${id}"]` }] });
    expect(rm.status).toBe(200);
    expect(rm.body.members).toEqual([]);
    expect((await env.call("GET", `/api/v1/teams/${gid}/members`, env.A)).body.userIds).toEqual([]);
    // deactivate: Entra sends "False" as a string
    const off = await scim("PATCH", `/Users/${id}`, { schemas: [PATCH_OP], Operations: [{ op: "Replace", path: "active", value: "False" }] });
    expect(off.status).toBe(200);
    expect(off.body.active).toBe(false);
    expect((await env.call("GET", `/api/v1/users/${id}`, env.A)).body.status).toBe("SUSPENDED");
    expectError(await env.call("GET", KEYS, token), 401, "authentication_error", "suspended");
    // reactivate, the token works again; then delete: refused for good
    await scim("PATCH", `/Users/${id}`, { schemas: [PATCH_OP], Operations: [{ op: "Replace", path: "active", value: "True" }] });
    expect((await env.call("GET", KEYS, token)).status).toBe(200);
    const del = await scim("DELETE", `/Users/${id}`);
    expect(del.status).toBe(204);
    expect(del.body).toBeUndefined();
    expectScimError(await scim("GET", `/Users/${id}`), 404);
    // soft-deleted: the admin API still shows the record, with deleted_at (doc3 §3), but lists exclude it
    expect((await env.call("GET", `/api/v1/users/${id}`, env.A)).body.deleted_at).toEqual(expect.any(String));
    expectError(await env.call("GET", KEYS, token), 401, "authentication_error", "deleted");
    expectScimError(await scim("DELETE", `/Users/${id}`), 404);
    expect((await scim("DELETE", `/Groups/${gid}`)).status).toBe(204);
    expectError(await env.call("GET", `/api/v1/teams/${gid}`, env.A), 404, "not_found");
  });
});

describe("Entra ID's other PATCH forms", () => {
  test("Remove with a members value list removes only those; path-less Add with dotted keys; Replace userName", async () => {
    const scim = scimClient(env.gw.url, (await scimToken(env, ALL)).plain);
    const mk = async (n: string) => (await scim("POST", "/Users", { schemas: [SCIM_USER], userName: `${n}-${uuid().slice(0, 6)}@contoso.test` })).body;
    const [a, b, c] = [await mk("a"), await mk("b"), await mk("c")];
    const g = (await scim("POST", "/Groups", { schemas: [SCIM_GROUP], displayName: `Entra-${uuid()}`, members: [{ value: a.id }, { value: b.id }, { value: c.id }] })).body;
    const rm = await scim("PATCH", `/Groups/${g.id}`, { schemas: [PATCH_OP], Operations: [{ op: "Remove", path: "members", value: [{ value: a.id }, { value: c.id }] }] });
    expect(rm.status).toBe(200);
    expect(rm.body.members.map((m: any) => m.value)).toEqual([b.id]);
    expect((await env.call("GET", `/api/v1/teams/${g.id}/members`, env.A)).body.userIds).toEqual([b.id]);
    const add = await scim("PATCH", `/Users/${b.id}`, { schemas: [PATCH_OP], Operations: [{ op: "Add", value: { "name.givenName": "Bea", "name.familyName": "Zed", title: "CTO" } }] });
    expect(add.body).toMatchObject({ name: { givenName: "Bea", familyName: "Zed" }, title: "CTO" });
    expect((await env.call("GET", `/api/v1/users/${b.id}`, env.A)).body.name).toBe("Bea Zed");
    const ren = await scim("PATCH", `/Users/${b.id}`, { schemas: [PATCH_OP], Operations: [{ op: "Replace", path: "userName", value: "bea@contoso.test" }] });
    expect(ren.body.userName).toBe("bea@contoso.test");
    expect((await scim("GET", `/Users?${f('userName eq "BEA@contoso.test"')}`)).body.Resources.map((u: any) => u.id)).toEqual([b.id]);
  });
});

describe("an Okta provisioning session", () => {
  test("filter with paging, create, PUT replace, groups with members, PATCH add/remove/replace members, deactivate by PATCH value object, delete", async () => {
    const t = await env.gw.token("tenant-okta", ["WorkspaceAdmin"]);
    const scim = scimClient(env.gw.url, (await scimToken(env, ALL, t)).plain);
    const login = (n: string) => `${n}@okta-acme.test`;
    expect((await scim("GET", `/Users?${f(`userName eq "${login("bob")}"`)}&startIndex=1&count=100`)).body.totalResults).toBe(0);
    const okUser = (n: string) => ({
      schemas: [SCIM_USER],
      userName: login(n),
      name: { givenName: n, familyName: "Okta" },
      emails: [{ primary: true, value: login(n), type: "work" }],
      displayName: `${n} Okta`,
      locale: "en-US",
      externalId: `00u${n}`,
      groups: [],
      password: "ignored-Passw0rd!",
      active: true,
    });
    const bob = (await scim("POST", "/Users", okUser("bob"))).body;
    const carol = (await scim("POST", "/Users", okUser("carol"))).body;
    expect(bob).toMatchObject({ userName: login("bob"), active: true, externalId: "00ubob" });
    expect(bob.password).toBeUndefined();
    // PUT replaces the user
    const put = await scim("PUT", `/Users/${bob.id}`, { ...okUser("bob"), displayName: "Robert Okta", name: { givenName: "Robert", familyName: "Okta" } });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ id: bob.id, displayName: "Robert Okta", name: { givenName: "Robert", familyName: "Okta" } });
    // a group pushed with its members
    const g = await scim("POST", "/Groups", { schemas: [SCIM_GROUP], displayName: "Okta Admins", members: [{ value: bob.id, display: login("bob") }] });
    expect(g.status).toBe(201);
    expect(g.body.members.map((m: any) => m.value)).toEqual([bob.id]);
    const gid = g.body.id;
    // Okta's membership PATCHes (lower-case ops)
    expect((await scim("PATCH", `/Groups/${gid}`, { schemas: [PATCH_OP], Operations: [{ op: "add", path: "members", value: [{ value: carol.id, display: login("carol") }] }] })).body.members.map((m: any) => m.value).sort()).toEqual([bob.id, carol.id].sort());
    expect((await scim("PATCH", `/Groups/${gid}`, { schemas: [PATCH_OP], Operations: [{ op: "remove", path: `members[value eq "${bob.id}"]` }] })).body.members.map((m: any) => m.value)).toEqual([carol.id]);
    const rep = await scim("PATCH", `/Groups/${gid}`, { schemas: [PATCH_OP], Operations: [{ op: "replace", path: "members", value: [{ value: bob.id }] }] });
    expect(rep.body.members.map((m: any) => m.value)).toEqual([bob.id]);
    expect((await env.call("GET", `/api/v1/teams/${gid}/members`, t)).body.userIds).toEqual([bob.id]);
    // PUT on the group: rename and members replaced
    const gput = await scim("PUT", `/Groups/${gid}`, { schemas: [SCIM_GROUP], displayName: "Okta Owners", members: [{ value: carol.id }, { value: bob.id }] });
    expect(gput.body).toMatchObject({ displayName: "Okta Owners" });
    expect((await env.call("GET", `/api/v1/teams/${gid}/members`, t)).body.userIds.sort()).toEqual([bob.id, carol.id].sort());
    // deactivate the Okta way, the user's token stops working
    const token = await userToken("tenant-okta", t, bob.id);
    expect((await env.call("GET", KEYS, token)).status).toBe(200);
    const off = await scim("PATCH", `/Users/${bob.id}`, { schemas: [PATCH_OP], Operations: [{ op: "replace", value: { active: false } }] });
    expect(off.body.active).toBe(false);
    expectError(await env.call("GET", KEYS, token), 401, "authentication_error");
    // deactivated users stay in lists (filter by active)
    expect((await scim("GET", `/Users?${f("active eq false")}`)).body.Resources.map((u: any) => u.id)).toEqual([bob.id]);
    // delete: the membership of the deleted user drops out of the group
    expect((await scim("DELETE", `/Users/${bob.id}`)).status).toBe(204);
    expect((await scim("GET", `/Groups/${gid}`)).body.members.map((m: any) => m.value)).toEqual([carol.id]);
    expect((await scim("DELETE", `/Groups/${gid}`)).status).toBe(204);
    expectScimError(await scim("GET", `/Groups/${gid}`), 404);
    // the activity log shows the session
    const acts = (await env.call("GET", "/api/v1/scim/activities?pageSize=100", t)).body.activities;
    expect(acts.every((a: any) => a.status === "success")).toBe(true);
    expect(acts.map((a: any) => `${a.operation}:${a.resourceType}`).reverse()).toEqual([
      "create:user",
      "create:user",
      "update:user",
      "create:group",
      "update:group",
      "update:group",
      "update:group",
      "update:group",
      "update:user",
      "delete:user",
      "delete:group",
    ]);
  });
});

describe("queries", () => {
  test("filters (eq ne co sw ew pr gt lt, and/or/not, complex), startIndex/count, sortBy, attributes", async () => {
    const t = await env.gw.token("tenant-scim-q", ["WorkspaceAdmin"]);
    const scim = scimClient(env.gw.url, (await scimToken(env, ALL, t)).plain);
    const mk = async (n: string, extra: Record<string, unknown> = {}) =>
      (await scim("POST", "/Users", { schemas: [SCIM_USER], userName: `${n}@q.test`, emails: [{ value: `${n}@q.test`, type: "work", primary: true }], displayName: n, ...extra })).body;
    const ann = await mk("ann", { externalId: "x-ann" });
    const ben = await mk("ben", { active: false });
    const cid = await mk("cid", { externalId: "x-cid" });
    const names = async (q: string) => (await scim("GET", `/Users?${q}`)).body.Resources.map((u: any) => u.displayName);
    expect(await names(f('userName eq "ben@q.test"'))).toEqual(["ben"]);
    expect(await names(f('userName ne "ben@q.test"'))).toEqual(["ann", "cid"]);
    expect(await names(f('displayName co "i"'))).toEqual(["cid"]);
    expect(await names(f('userName sw "a"'))).toEqual(["ann"]);
    expect(await names(f('userName ew "n@q.test"'))).toEqual(["ann", "ben"]);
    expect(await names(f("externalId pr"))).toEqual(["ann", "cid"]);
    expect(await names(f('externalId eq "x-cid"'))).toEqual(["cid"]);
    expect(await names(f('externalId eq "X-CID"'))).toEqual([]);
    expect(await names(f('userName eq "ANN@Q.TEST"'))).toEqual(["ann"]);
    expect(await names(f('externalId pr and displayName eq "cid"'))).toEqual(["cid"]);
    expect(await names(f('displayName eq "ann" or displayName eq "ben"'))).toEqual(["ann", "ben"]);
    expect(await names(f('not (displayName eq "ann")'))).toEqual(["ben", "cid"]);
    expect(await names(f('emails[type eq "work" and value co "cid"]'))).toEqual(["cid"]);
    expect(await names(f("active eq true"))).toEqual(["ann", "cid"]);
    expect(await names(f(`meta.created gt "${ann.meta.created}"`))).toEqual(["ben", "cid"].filter((n) => (n === "ben" ? ben : cid).meta.created > ann.meta.created));
    expect(await names(f(`meta.created lt "2000-01-01T00:00:00Z"`))).toEqual([]);
    // paging
    const p = (await scim("GET", "/Users?startIndex=2&count=1")).body;
    expect(p).toMatchObject({ totalResults: 3, startIndex: 2, itemsPerPage: 1 });
    expect(p.Resources.map((u: any) => u.displayName)).toEqual(["ben"]);
    expect((await scim("GET", "/Users?count=0")).body).toMatchObject({ totalResults: 3, itemsPerPage: 0, Resources: [] });
    expect(await names("sortBy=displayName&sortOrder=descending")).toEqual(["cid", "ben", "ann"]);
    // attribute selection (id and schemas are always returned)
    const sel = (await scim("GET", `/Users/${ann.id}?attributes=userName`)).body;
    expect(sel).toEqual({ schemas: [SCIM_USER], id: ann.id, userName: "ann@q.test" });
    const ex = (await scim("GET", `/Users?excludedAttributes=emails,name&${f('userName eq "ann@q.test"')}`)).body.Resources[0];
    expect(ex.emails).toBeUndefined();
    expect(ex.userName).toBe("ann@q.test");
    // bad queries
    expectScimError(await scim("GET", `/Users?${f("userName eq")}`), 400, "invalidFilter");
    expectScimError(await scim("GET", "/Users?count=abc"), 400, "invalidValue");
  });
});

describe("errors, scopes and isolation", () => {
  test("SCIM's error schema for uniqueness, invalid values and syntax, unknown ids, bad PatchOps; failures recorded", async () => {
    const t = await env.gw.token("tenant-scim-err", ["WorkspaceAdmin"]);
    const scim = scimClient(env.gw.url, (await scimToken(env, ALL, t)).plain);
    const u = (await scim("POST", "/Users", { schemas: [SCIM_USER], userName: "dup@e.test" })).body;
    expectScimError(await scim("POST", "/Users", { schemas: [SCIM_USER], userName: "DUP@e.test" }), 409, "uniqueness");
    expectScimError(await scim("POST", "/Users", { schemas: [SCIM_USER], displayName: "no user name" }), 400, "invalidValue");
    expectScimError(await scim("POST", "/Users", { schemas: [SCIM_USER], userName: "not-an-email" }), 400, "invalidValue", "e-mail");
    expectScimError(await scim("POST", "/Users", { schemas: [SCIM_USER], userName: "x@e.test", active: "maybe" }), 400, "invalidValue", "active");
    expectScimError(await scim("POST", "/Users", undefined, "{not json"), 400, "invalidSyntax");
    expectScimError(await scim("GET", `/Users/${uuid()}`), 404);
    expectScimError(await scim("PUT", `/Users/${uuid()}`, { schemas: [SCIM_USER], userName: "y@e.test" }), 404);
    expectScimError(await scim("PATCH", `/Users/${uuid()}`, { schemas: [PATCH_OP], Operations: [{ op: "replace", path: "active", value: false }] }), 404);
    expectScimError(await scim("PATCH", `/Users/${u.id}`, { schemas: [PATCH_OP], Operations: [{ op: "explode", path: "active" }] }), 400, "invalidSyntax", "explode");
    expectScimError(await scim("PATCH", `/Users/${u.id}`, { Operations: [] }), 400, "invalidSyntax");
    expectScimError(await scim("PATCH", `/Users/${u.id}`, { schemas: [PATCH_OP], Operations: [{ op: "replace", path: "nonsense", value: 1 }] }), 400, "invalidPath");
    // groups: unknown members and duplicate names
    const g = (await scim("POST", "/Groups", { schemas: [SCIM_GROUP], displayName: "G1" })).body;
    expectScimError(await scim("POST", "/Groups", { schemas: [SCIM_GROUP], displayName: "g1" }), 409, "uniqueness");
    expectScimError(await scim("PATCH", `/Groups/${g.id}`, { schemas: [PATCH_OP], Operations: [{ op: "add", path: "members", value: [{ value: uuid() }] }] }), 400, "invalidValue", "no user");
    expectScimError(await scim("POST", "/Groups", { schemas: [SCIM_GROUP], displayName: "x".repeat(129) }), 400, "invalidValue");
    const errors = (await env.call("GET", "/api/v1/scim/activities?status=error&pageSize=100", t)).body;
    expect(errors.total).toBeGreaterThanOrEqual(10);
    expect(errors.activities.every((a: any) => typeof a.errorMessage === "string" && a.details.httpStatus >= 400)).toBe(true);
  });

  test("scopes enforced per operation (403); no token, an admin JWT, a revoked token: 401; workspaces are isolated", async () => {
    const readOnly = scimClient(env.gw.url, (await scimToken(env, ["users:read"])).plain);
    expect((await readOnly("GET", "/Users")).status).toBe(200);
    expectScimError(await readOnly("POST", "/Users", { schemas: [SCIM_USER], userName: "s@s.test" }), 403, undefined, "users:write");
    expectScimError(await readOnly("GET", "/Groups"), 403, undefined, "groups:read");
    const groupsOnly = scimClient(env.gw.url, (await scimToken(env, ["groups:read", "groups:write"])).plain);
    expectScimError(await groupsOnly("GET", "/Users"), 403);
    expect((await groupsOnly("POST", "/Groups", { schemas: [SCIM_GROUP], displayName: `gonly-${uuid()}` })).status).toBe(201);
    expectScimError(await groupsOnly("DELETE", `/Users/${uuid()}`), 403);
    expectScimError(await scimClient(env.gw.url, "")("GET", "/Users"), 401);
    expectScimError(await scimClient(env.gw.url, env.A)("GET", "/Users"), 401);
    expectScimError(await scimClient(env.gw.url, "scim_" + "A".repeat(43))("GET", "/Users"), 401);
    const r = await fetch(`${env.gw.url}/scim/v2/Users`);
    expect(r.status).toBe(401);
    expect(r.headers.get("content-type")).toBe("application/scim+json");
    // isolation: B's token never sees or changes A's users and groups
    const a = scimClient(env.gw.url, (await scimToken(env, ALL)).plain);
    const b = scimClient(env.gw.url, (await scimToken(env, ALL, env.B)).plain);
    const ua = (await a("POST", "/Users", { schemas: [SCIM_USER], userName: `iso-${uuid().slice(0, 6)}@a.test` })).body;
    expectScimError(await b("GET", `/Users/${ua.id}`), 404);
    expectScimError(await b("PATCH", `/Users/${ua.id}`, { schemas: [PATCH_OP], Operations: [{ op: "replace", path: "active", value: false }] }), 404);
    expectScimError(await b("DELETE", `/Users/${ua.id}`), 404);
    expect((await b("GET", `/Users?${f(`userName eq "${ua.userName}"`)}`)).body.totalResults).toBe(0);
    expectScimError(await b("POST", "/Groups", { schemas: [SCIM_GROUP], displayName: `iso-${uuid()}`, members: [{ value: ua.id }] }), 400, "invalidValue");
    expect((await a("GET", `/Users/${ua.id}`)).body.active).toBe(true);
  });
});
