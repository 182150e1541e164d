/**
 * SCIM details of RFC 7643/7644 identity providers rely on: attribute names in PATCH paths and
 * values are case-insensitive, a startIndex past the total answers an empty page, POST /.search
 * takes a SearchRequest; and bounds on filters and paths before SCIMMY parses them.
 */
import { describe, expect, test, beforeAll, afterAll } from "bun:test";
import { startIdentity, type IdentityEnv } from "./helpers";
import { ENTERPRISE, LIST, PATCH_OP, SCIM_GROUP, SCIM_USER, expectScimError, scimClient, scimToken } from "./scim-helpers";

let env: IdentityEnv;
let scim: ReturnType<typeof scimClient>;
const SEARCH = "urn:ietf:params:scim:api:messages:2.0:SearchRequest";
beforeAll(async () => {
  env = await startIdentity();
  scim = scimClient(env.gw.url, (await scimToken(env, ["users:read", "users:write", "groups:read", "groups:write"])).plain);
});
afterAll(() => env.gw.stop());

const newUser = async (name: string) => {
  const u = await scim("POST", "/Users", { schemas: [SCIM_USER], userName: `${name}@rfc.test`, name: { givenName: "G" }, emails: [{ value: `${name}@rfc.test`, type: "work", primary: true }] });
  expect(u.status).toBe(201);
  return u.body as { id: string };
};
const patch = (path: string, Operations: unknown[]) => scim("PATCH", path, { schemas: [PATCH_OP], Operations });

describe("PATCH attribute names are case-insensitive (RFC 7643 §2.1)", () => {
  test("paths DisplayName, NAME.GivenName, EMAILS[TYPE eq \"work\"].VALUE, Active and an extension attribute in any case", async () => {
    const u = await newUser("casey");
    const ops = [
      { op: "replace", path: "DisplayName", value: "Casey D" },
      { op: "replace", path: "NAME.GivenName", value: "Casey" },
      { op: "replace", path: 'EMAILS[TYPE eq "work"].VALUE', value: "casey.d@rfc.test" },
      { op: "replace", path: "Active", value: "False" },
      { op: "replace", path: `${ENTERPRISE.toUpperCase()}:Department`, value: "R&D" },
    ];
    for (const op of ops) expect((await patch(`/Users/${u.id}`, [op])).status).toBe(200);
    const got = (await scim("GET", `/Users/${u.id}`)).body;
    expect(got).toMatchObject({ displayName: "Casey D", name: { givenName: "Casey" }, active: false, [ENTERPRISE]: { department: "R&D" } });
    expect(got.emails[0].value).toBe("casey.d@rfc.test");
  }, 30_000);

  test("a path-less replace with odd-case keys, and a Group's DisplayName / Members", async () => {
    const u = await newUser("valery");
    const r = await patch(`/Users/${u.id}`, [{ op: "replace", value: { DisplayName: "Val", NAME: { FamilyName: "Ery" }, Active: true } }]);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ displayName: "Val", name: { familyName: "Ery" }, active: true });
    const g = (await scim("POST", "/Groups", { schemas: [SCIM_GROUP], displayName: "Case Group" })).body;
    const gr = await patch(`/Groups/${g.id}`, [
      { op: "Replace", path: "DisplayName", value: "Case Group 2" },
      { op: "Add", path: "Members", value: [{ Value: u.id }] },
    ]);
    expect(gr.status).toBe(200);
    expect(gr.body).toMatchObject({ displayName: "Case Group 2", members: [{ value: u.id }] });
  }, 30_000);

  test("an unknown attribute is still refused in SCIM's error schema, not with a JavaScript error", async () => {
    const u = await newUser("unknownattr");
    const r = await patch(`/Users/${u.id}`, [{ op: "replace", path: "noSuchThing", value: "x" }]);
    expect(r.status).toBe(400);
    expect(r.body.detail).not.toContain("not extensible");
  }, 30_000);
});

describe("paging and .search", () => {
  test("startIndex past the total answers an empty page with the total", async () => {
    await newUser("pager");
    const all = (await scim("GET", "/Users")).body;
    const r = await scim("GET", `/Users?startIndex=${all.totalResults + 1}`);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ schemas: [LIST], totalResults: all.totalResults, startIndex: all.totalResults + 1, itemsPerPage: 0, Resources: [] });
    const far = await scim("GET", "/Users?startIndex=100000&count=5");
    expect(far.body.Resources).toEqual([]);
  }, 30_000);

  test("POST /Users/.search and /Groups/.search take a SearchRequest (filter, attributes, startIndex, count)", async () => {
    const u = await newUser("searcher");
    const r = await scim("POST", "/Users/.search", { schemas: [SEARCH], filter: 'userName eq "searcher@rfc.test"', attributes: ["userName"], startIndex: 1, count: 10 });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ schemas: [LIST], totalResults: 1, Resources: [{ id: u.id, userName: "searcher@rfc.test" }] });
    expect(r.body.Resources[0].emails).toBeUndefined();
    const g = (await scim("POST", "/Groups", { schemas: [SCIM_GROUP], displayName: "Searchable" })).body;
    const gs = await scim("POST", "/Groups/.search", { schemas: [SEARCH], filter: 'displayName eq "Searchable"' });
    expect(gs.body).toMatchObject({ totalResults: 1, Resources: [{ id: g.id }] });
    // past the end: empty
    expect((await scim("POST", "/Users/.search", { schemas: [SEARCH], startIndex: 100000 })).body.Resources).toEqual([]);
    // not a SearchRequest, a bad filter, no read scope
    expectScimError(await scim("POST", "/Users/.search", { schemas: ["urn:nope"] }), 400, "invalidSyntax", "SearchRequest");
    expectScimError(await scim("POST", "/Users/.search", { schemas: [SEARCH], filter: "userName zz" }), 400, "invalidFilter");
    const writeOnly = scimClient(env.gw.url, (await scimToken(env, ["users:write"])).plain);
    expectScimError(await writeOnly("POST", "/Users/.search", { schemas: [SEARCH] }), 403);
  }, 30_000);
});

describe("bounds before SCIMMY parses", () => {
  const many = (n: number) => Array.from({ length: n }, (_, i) => `userName eq "u${i}@rfc.test"`).join(" or ");

  test("a filter of 20,000 or-terms (query or .search), one nested past 8 levels and a PATCH path of 10 KB are refused with 400 invalidFilter / invalidPath", async () => {
    expectScimError(await scim("POST", "/Users/.search", { schemas: [SEARCH], filter: many(20_000) }), 400, "invalidFilter", "longer than");
    expectScimError(await scim("GET", `/Users?filter=${encodeURIComponent(many(100))}`), 400, "invalidFilter", "and/or terms");
    expectScimError(await scim("GET", `/Users?filter=${encodeURIComponent("(".repeat(20) + 'userName eq "a"' + ")".repeat(20))}`), 400, "invalidFilter", "nested deeper");
    const u = await newUser("pathbound");
    expectScimError(await patch(`/Users/${u.id}`, [{ op: "replace", path: `emails[${"[".repeat(10_000)}]`, value: "x" }]), 400, "invalidPath");
    // a realistic filter still works
    expect((await scim("GET", `/Users?filter=${encodeURIComponent(many(10))}`)).status).toBe(200);
  }, 30_000);
});
