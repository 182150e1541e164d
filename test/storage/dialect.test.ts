/**
 * The dialect's fragments (src/storage/dialect.ts) give the same answers on both backends: upserts,
 * case-insensitive matching and ordering, JSON in TEXT, time arithmetic, full-text search ranking
 * basics, and Float32 vectors through BLOB/BYTEA.
 */
import { beforeAll, expect, test } from "bun:test";
import type { AsyncStorage } from "../../src/storage/async";
import { likePattern, upsert, vectorBytes, vectorOf, type Dialect } from "../../src/storage/dialect";
import { portable } from "../../src/storage/migrations";
import { eachBackend, SETUP_TIMEOUT } from "./backends";

const schema = (d: Dialect) => `
  CREATE TABLE kv (tenant_id TEXT NOT NULL, k TEXT NOT NULL, v TEXT, hits BIGINT NOT NULL DEFAULT 0, meta TEXT, at TEXT, at_ms BIGINT, vec ${d.blob}, PRIMARY KEY (tenant_id, k));
  CREATE TABLE docs (key ${d.autoId}, tenant_id TEXT NOT NULL, body TEXT NOT NULL);
  ${d.ftsTable({ table: "docs_fts", ranked: ["body"], unranked: ["scope"] })}`;

eachBackend("dialect", (b) => {
  let s: AsyncStorage;
  let d: Dialect;
  beforeAll(async () => {
    s = await b.open();
    d = s.dialect;
    await s.migrate([{ domain: "dialect", migrations: [{ id: "0001", up: portable(schema) }] }]);
  }, SETUP_TIMEOUT);

  test("upsert inserts, then updates the listed columns or applies the given expressions", async () => {
    const t = s.tenant("u");
    const put = upsert("kv", ["tenant_id", "k", "v", "hits"], ["tenant_id", "k"]);
    await t.run(put.replace("$tenant_id", "$tenant"), { k: "a", v: "one", hits: 1 });
    await t.run(put.replace("$tenant_id", "$tenant"), { k: "a", v: "two", hits: 5 });
    expect(await t.get("SELECT v, hits FROM kv WHERE tenant_id = $tenant AND k = 'a'")).toEqual({ v: "two", hits: 5 });
    const bump = upsert("kv", ["tenant_id", "k", "hits"], ["tenant_id", "k"], { hits: "kv.hits + excluded.hits" }).replace("$tenant_id", "$tenant");
    await t.run(bump, { k: "a", hits: 3 });
    await t.run(bump, { k: "b", hits: 3 });
    expect(await t.all("SELECT k, v, hits FROM kv WHERE tenant_id = $tenant ORDER BY k")).toEqual([
      { k: "a", v: "two", hits: 8 },
      { k: "b", v: null, hits: 3 },
    ]);
    const ignore = upsert("kv", ["tenant_id", "k", "v"], ["tenant_id", "k"], []).replace("$tenant_id", "$tenant");
    expect(ignore).toContain("DO NOTHING");
    expect((await t.run(ignore, { k: "a", v: "three" })).changes).toBe(0);
    expect((await t.get<{ v: string }>("SELECT v FROM kv WHERE tenant_id = $tenant AND k = 'a'"))!.v).toBe("two");
  });

  test("case-insensitive equality, LIKE (with % and _ taken literally) and ordering", async () => {
    const t = s.tenant("ci");
    for (const k of ["beta", "Alpha", "gamma_1", "gammax1", "ALPHA2"]) await t.run("INSERT INTO kv (tenant_id, k, v) VALUES ($tenant, $k, $k)", { k });
    expect(await t.all(`SELECT k FROM kv WHERE tenant_id = $tenant AND ${d.ciEquals("v", "$q")}`, { q: "ALPHA" })).toEqual([{ k: "Alpha" }]);
    expect(await t.all(`SELECT k FROM kv WHERE tenant_id = $tenant AND ${d.ciLike("v", "$p")} ORDER BY k`, { p: likePattern("alp", "prefix") })).toEqual([{ k: "ALPHA2" }, { k: "Alpha" }]);
    expect(await t.all(`SELECT k FROM kv WHERE tenant_id = $tenant AND ${d.ciLike("v", "$p")}`, { p: likePattern("A_1") })).toEqual([{ k: "gamma_1" }]);
    expect((await t.all<{ k: string }>(`SELECT k FROM kv WHERE tenant_id = $tenant ORDER BY ${d.ciOrder("k")}, k`)).map((r) => r.k)).toEqual(["Alpha", "ALPHA2", "beta", "gamma_1", "gammax1"]);
  });

  test("JSON in TEXT: a path's text, the elements of an array column and of an array parameter, aggregation", async () => {
    const t = s.tenant("js");
    await t.run("INSERT INTO kv (tenant_id, k, meta) VALUES ($tenant, 'a', $m1), ($tenant, 'b', $m2), ($tenant, 'c', NULL)", {
      m1: JSON.stringify({ scim: { userName: "Ann" }, perms: ["read", "write"] }),
      m2: JSON.stringify({ scim: { userName: "bob" }, perms: ["read"] }),
    });
    expect(await t.all(`SELECT k FROM kv WHERE tenant_id = $tenant AND lower(${d.jsonText("meta", ["scim", "userName"])}) = $u`, { u: "ann" })).toEqual([{ k: "a" }]);
    expect(await t.all(`SELECT k FROM kv WHERE tenant_id = $tenant AND EXISTS (SELECT 1 FROM ${d.jsonEach(d.jsonText("kv.meta", ["perms"]))} WHERE value = $p) ORDER BY k`, { p: "write" })).toEqual([{ k: "a" }]);
    expect(await t.all(`SELECT k FROM kv WHERE tenant_id = $tenant AND k IN ${d.inJsonArray("$ids")} ORDER BY k`, { ids: JSON.stringify(["c", "a", "zz"]) })).toEqual([{ k: "a" }, { k: "c" }]);
    const agg = await t.get<{ ks: string }>(`SELECT ${d.jsonArrayAgg("k")} AS ks FROM (SELECT k FROM kv WHERE tenant_id = $tenant ORDER BY k) x`);
    expect(JSON.parse(agg!.ks).sort()).toEqual(["a", "b", "c"]);
  });

  test("time: ms to ISO, buckets, adding seconds, now", async () => {
    const t = s.tenant("tm");
    const ms = Date.UTC(2026, 0, 31, 23, 59, 58, 123);
    await t.run("INSERT INTO kv (tenant_id, k, at, at_ms) VALUES ($tenant, 'x', $iso, $ms)", { iso: new Date(ms).toISOString(), ms });
    const row = await t.get(
      `SELECT ${d.msToIso("at_ms")} AS iso, ${d.isoBucket("at", "minute")} AS mi, ${d.isoBucket("at", "hour")} AS h, ${d.isoBucket("at", "day")} AS dd, ${d.isoBucket("at", "month")} AS mo,
              ${d.isoAddSeconds("at", "$secs")} AS later, ${d.isoAddSeconds("at", "-60")} AS earlier, ${d.nowMs} AS now
         FROM kv WHERE tenant_id = $tenant`,
      { secs: 3 },
    );
    const now = Date.now();
    expect(row).toEqual({
      iso: "2026-01-31T23:59:58.123Z",
      mi: "2026-01-31T23:59:00Z",
      h: "2026-01-31T23:00:00Z",
      dd: "2026-01-31",
      mo: "2026-01",
      later: "2026-02-01T00:00:01.123Z",
      earlier: "2026-01-31T23:58:58.123Z",
      now: expect.any(Number),
    });
    expect(Math.abs((row as { now: number }).now - now)).toBeLessThan(60_000);
  });

  test("full-text search: matches any or all words, the document with more matching words ranks first", async () => {
    const t = s.tenant("fts");
    const bodies = ["the deploy failed on friday", "deploy rollback plan for the friday deploy failure", "lunch menu", "Deploy checklist"] as const;
    for (const body of bodies) {
      const r = await t.get<{ key: number }>("INSERT INTO docs (tenant_id, body) VALUES ($tenant, $body) RETURNING key", { body });
      await s.global("test: fts rows are keyed by their owner").run("INSERT INTO docs_fts (rowid, body, scope) VALUES ($k, $body, 'x')", { k: r!.key, body });
    }
    const search = (words: string[], mode: "any" | "all") =>
      t.all<{ body: string }>(
        `SELECT i.body FROM docs_fts f JOIN docs i ON i.key = f.rowid
          WHERE ${d.ftsMatch("f", "docs_fts", "$q")} AND i.tenant_id = $tenant
          ORDER BY ${d.ftsRank("f", "docs_fts", "$q")} DESC, i.key`,
        { q: d.ftsQuery(words, mode) },
      );
    const any = (await search(["rollback", "friday"], "any")).map((r) => r.body);
    expect(any).toEqual([bodies[1], bodies[0]]);
    expect((await search(["deploy", "friday"], "all")).map((r) => r.body).sort()).toEqual([bodies[0], bodies[1]].sort());
    expect((await search(["DEPLOY"], "any")).map((r) => r.body)).toContain("Deploy checklist"); // case-folded
    expect(await search(["it's", 'say "x"'], "any")).toEqual([]); // quotes in words cannot break the query
    await s.global("test").run("DELETE FROM docs_fts WHERE rowid = $k", { k: 3 });
    expect(await search(["lunch"], "any")).toEqual([]);
  });

  test("Float32 vectors round-trip bit-exactly through BLOB/BYTEA", async () => {
    const t = s.tenant("vec");
    const v = new Float32Array([0.1, -1.5, 3.4028234663852886e38, 1e-45, -0, Math.PI]);
    await t.run("INSERT INTO kv (tenant_id, k, vec) VALUES ($tenant, 'v', $vec)", { vec: vectorBytes(v) });
    const row = await t.get<{ vec: Uint8Array }>("SELECT vec FROM kv WHERE tenant_id = $tenant AND k = 'v'");
    expect(row!.vec).toBeInstanceOf(Uint8Array);
    expect(Array.from(vectorOf(row!.vec))).toEqual(Array.from(v));
    expect(Object.is(vectorOf(row!.vec)[4], -0)).toBe(true);
    // an unaligned view is copied, not misread
    const unaligned = new Uint8Array(v.byteLength + 1);
    unaligned.set(vectorBytes(v), 1);
    expect(Array.from(vectorOf(unaligned.subarray(1)))).toEqual(Array.from(v));
  });
});
