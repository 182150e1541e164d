/**
 * The prompts domain (prompts, versions, runs, folders, chains) over the async storage, the same
 * tests on bun:sqlite and PostgreSQL: the services as the routes call them, tenant isolation, the
 * dialect-specific queries (tags through the JSON array, folded search with literal % and _,
 * folders ordered ignoring case, the recursive ancestry), the transactions under concurrency from
 * two storages on one database (two "replicas"), and the migrations' PostgreSQL sides.
 */
import { beforeAll, expect, test } from "bun:test";
import type { AsyncStorage } from "../../src/storage/async";
import { promptServices, type PromptServices } from "../../src/prompts";
import { PROMPTS_MIGRATIONS } from "../../src/prompts/migrations";
import { ApiError } from "../../src/core/errors";
import { eachBackend, SETUP_TIMEOUT } from "../storage/backends";
import { RecordingGateway } from "../prompts/helpers";

const SETS = [{ domain: "prompts", migrations: PROMPTS_MIGRATIONS }];
const alice = { tenantId: "ta", sub: "alice" };
const eve = { tenantId: "tb", sub: "eve" };
const page = (limit = 50, offset = 0) => ({ page: 1, pageSize: limit, limit, offset });

eachBackend("prompts", (b) => {
  let s: AsyncStorage;
  let other: AsyncStorage; // a second storage on the same database: another replica
  let svc: PromptServices;
  let svc2: PromptServices;
  const gateway = new RecordingGateway((r) => (r.model === "broken" ? new ApiError("proxy_error", "upstream said 500") : `echo ${r.messages[0]!.content}`));
  beforeAll(async () => {
    s = await b.open();
    await s.migrate(SETS);
    other = await b.open();
    svc = promptServices(s, gateway);
    svc2 = promptServices(other, gateway);
  }, SETUP_TIMEOUT);

  test("versions: create v1, unchanged template keeps it, N+1, explicit version, rollback, diff; read on the other replica; other tenants see nothing", async () => {
    const p = await svc.prompts.create(alice, { name: "Greeting", template: "Hi {{name}}", model: "m", temperature: 0.7, maxTokens: 64, tags: ["a", "a", "b"] });
    expect(p).toMatchObject({ slug: "greeting", currentVersion: 1, tags: ["a", "b"], variables: [{ name: "name" }], temperature: 0.7 });
    expect((await svc.prompts.update(alice, p.id, { template: "Hi {{name}}" })).currentVersion).toBe(1);
    expect((await svc.prompts.update(alice, p.id, { template: "Hello {{name}}", message: "m2" })).currentVersion).toBe(2);
    expect((await svc.prompts.addVersion(alice, p.id, { template: "Yo {{who}}" })).version).toBe(3);
    expect(await svc.prompts.rollback(alice, p.id, 1)).toMatchObject({ version: 4, template: "Hi {{name}}", message: "Rollback to version 1" });
    // the other replica reads what this one wrote, with exact doubles (PostgreSQL's REAL would give 0.699999988)
    expect(await svc2.prompts.get(alice, p.id)).toMatchObject({ currentVersion: 4, template: "Hi {{name}}", temperature: 0.7, maxTokens: 64, model: "m" });
    expect((await svc2.prompts.listVersions(alice, p.id, page())).items.map((v) => [v.version, v.message])).toEqual([
      [4, "Rollback to version 1"],
      [3, null],
      [2, "m2"],
      [1, "Initial version"],
    ]);
    expect((await svc2.prompts.listVersions(alice, p.id, page(2, 1))).items.map((v) => v.version)).toEqual([3, 2]);
    const d = await svc.prompts.diff(alice, p.id, 2, 3);
    expect(d).toMatchObject({ fromVersion: 2, toVersion: 3, variablesAdded: [{ name: "who" }], variablesRemoved: [{ name: "name" }] });
    await expect(svc.prompts.rollback(alice, p.id, 99)).rejects.toMatchObject({ status: 404 });
    expect((await svc.prompts.get(alice, p.id)).currentVersion).toBe(4); // the failed rollback changed nothing
    // tenant isolation: nothing of ta is visible or writable from tb
    await expect(svc.prompts.get(eve, p.id)).rejects.toMatchObject({ status: 404 });
    await expect(svc.prompts.update(eve, p.id, { name: "x" })).rejects.toMatchObject({ status: 404 });
    await expect(svc.prompts.listVersions(eve, p.id, page())).rejects.toMatchObject({ status: 404 });
    await expect(svc.prompts.delete(eve, p.id)).rejects.toMatchObject({ status: 404 });
    expect((await svc.prompts.list(eve, {}, page())).total).toBe(0);
    // the same name in another tenant gets the plain slug
    expect((await svc.prompts.create(eve, { name: "Greeting", template: "x" })).slug).toBe("greeting");
  });

  test("list filters: tag (JSON array), status, folder, search folded beyond ASCII with literal % and _; paging; delete takes versions and runs along", async () => {
    const t = { tenantId: "tl", sub: "lin" };
    const f = await svc.folders.create(t, { name: "F" });
    const a = await svc.prompts.create(t, { name: "Überblick 50%", template: "x", tags: ["red", "blue"], folderId: f.id, description: "ÅRSRAPPORT" });
    const b2 = await svc.prompts.create(t, { name: "Plain 50 percent", template: "x", tags: ["blue"], status: "PUBLISHED" });
    const c = await svc.prompts.create(t, { name: "snake_case", template: "x", tags: ["redder"] });
    const ids = async (filter: Parameters<PromptServices["prompts"]["list"]>[1]) => (await svc2.prompts.list(t, filter, page())).items.map((p) => p.id).sort();
    expect(await ids({ tag: "red" })).toEqual([a.id]); // an element, not a substring of "redder"
    expect(await ids({ tag: "blue" })).toEqual([a.id, b2.id].sort());
    expect(await ids({ tag: "nope" })).toEqual([]);
    expect(await ids({ status: "PUBLISHED" })).toEqual([b2.id]);
    expect(await ids({ folderId: f.id })).toEqual([a.id]);
    expect(await ids({ search: "ÜBERBLICK" })).toEqual([a.id]);
    expect(await ids({ search: "årsrapport" })).toEqual([a.id]);
    expect(await ids({ search: "50%" })).toEqual([a.id]); // % is literal
    expect(await ids({ search: "e_c" })).toEqual([c.id]); // _ is literal: "plain 50 percent" has no "e_c"
    expect(await ids({ search: "50", tag: "blue", status: "DRAFT" })).toEqual([a.id]);
    await svc.prompts.update(t, b2.id, { description: "touched last" });
    const full = (await svc.prompts.list(t, {}, page())).items.map((p) => p.id);
    expect(full[0]).toBe(b2.id); // newest update first
    const first = await svc.prompts.list(t, {}, page(2, 0));
    expect(first.total).toBe(3);
    expect([...first.items, ...(await svc.prompts.list(t, {}, page(2, 2))).items].map((p) => p.id)).toEqual(full);
    // delete: the prompt with its versions and runs
    await svc.runs.execute(t, a.id, { dryRun: true });
    await svc.prompts.delete(t, a.id);
    await expect(svc2.prompts.get(t, a.id)).rejects.toMatchObject({ status: 404 });
    const left = await s.global("test: rows of a deleted prompt").get<{ v: number; r: number }>(
      "SELECT (SELECT count(*) FROM prompt_versions WHERE prompt_id = $id) AS v, (SELECT count(*) FROM prompt_runs WHERE prompt_id = $id) AS r",
      { id: a.id },
    );
    expect(left).toEqual({ v: 0, r: 0 });
    await expect(svc.prompts.delete(t, a.id)).rejects.toMatchObject({ status: 404 });
  });

  test("runs: completed, failed and dry runs recorded; newest first with insertion order inside one millisecond; filters; a prompt deleted mid-call leaves no run", async () => {
    const t = { tenantId: "tr", sub: "ron" };
    const p = await svc.prompts.create(t, { name: "R", template: "Ping {{x}}", model: "m" });
    const ok = await svc.runs.execute(t, p.id, { variables: { x: "1" }, temperature: 0.25 });
    expect(ok).toMatchObject({ response: "echo Ping 1", dryRun: false, version: 1 });
    await expect(svc.runs.execute(t, p.id, { variables: { x: "2" }, model: "broken" })).rejects.toMatchObject({ type: "proxy_error" });
    // many dry runs back to back: several share a millisecond; the list keeps their order
    const dry: string[] = [];
    for (let i = 0; i < 12; i++) dry.push((await svc.runs.execute(t, p.id, { variables: { x: String(i) }, dryRun: true })).runId);
    const all = await svc2.runs.listRuns(t, p.id, {}, page());
    expect(all.total).toBe(14);
    expect(all.items.slice(0, 12).map((r) => r.runId)).toEqual([...dry].reverse());
    expect(all.items.slice(12).map((r) => r.status)).toEqual(["FAILED", "COMPLETED"]);
    expect((await svc2.runs.listRuns(t, p.id, {}, page(3, 1))).items.map((r) => r.runId)).toEqual([dry[10]!, dry[9]!, dry[8]!]);
    expect((await svc2.runs.listRuns(t, p.id, { status: "FAILED" }, page())).items).toMatchObject([{ status: "FAILED", error: "proxy_error: upstream said 500", model: "broken" }]);
    expect((await svc2.runs.listRuns(t, p.id, { version: 2 }, page())).total).toBe(0);
    expect(await svc2.runs.getRun(t, p.id, ok.runId)).toMatchObject({ status: "COMPLETED", dryRun: false, cacheHit: false, usage: { promptTokens: 2, completionTokens: 3 }, createdBy: "ron" });
    await expect(svc2.runs.getRun(eve, p.id, ok.runId)).rejects.toMatchObject({ status: 404 });

    // the prompt goes away while its model call is in flight: the answer still reaches the caller, no orphan run
    let victim = "";
    const deleting = promptServices(s, new RecordingGateway(async () => (await svc2.prompts.delete(t, victim), "late")));
    victim = (await svc.prompts.create(t, { name: "Gone", template: "x", model: "m" })).id;
    expect(await deleting.runs.execute(t, victim, {})).toMatchObject({ response: "late" });
    const orphans = await s.global("test: runs without their prompt").get<{ n: number }>("SELECT count(*) AS n FROM prompt_runs r WHERE NOT EXISTS (SELECT 1 FROM prompts p WHERE p.id = r.prompt_id)");
    expect(orphans!.n).toBe(0);
  });

  test("folders: children ordered by name ignoring case; cycles refused at any depth (recursive ancestry); only empty folders delete; other tenants see none", async () => {
    const t = { tenantId: "tf", sub: "fay" };
    for (const name of ["beta", "Alpha", "gamma", "Beta2", "alpha2"]) await svc.folders.create(t, { name });
    expect((await svc2.folders.list(t, null, page())).items.map((f) => f.name)).toEqual(["Alpha", "alpha2", "beta", "Beta2", "gamma"]);
    let parent = await svc.folders.create(t, { name: "deep0" });
    const top = parent;
    for (let i = 1; i < 12; i++) parent = await svc.folders.create(t, { name: `deep${i}`, parentId: parent.id });
    await expect(svc2.folders.update(t, top.id, { parentId: parent.id })).rejects.toThrow("descendants");
    await expect(svc2.folders.update(t, top.id, { parentId: top.id })).rejects.toThrow("own parent");
    expect((await svc2.folders.get(t, top.id)).parentId).toBeNull();
    expect((await svc.folders.list(t, top.id, page())).total).toBe(1);
    // a folder holding a prompt or a subfolder is not deleted
    await expect(svc.folders.delete(t, top.id)).rejects.toThrow("not empty");
    const leaf = await svc.folders.create(t, { name: "leaf" });
    const inLeaf = await svc.prompts.create(t, { name: "in leaf", template: "x", folderId: leaf.id });
    await expect(svc.folders.delete(t, leaf.id)).rejects.toThrow("1 prompt(s)");
    await svc.prompts.update(t, inLeaf.id, { folderId: null });
    await svc.folders.delete(t, leaf.id);
    await expect(svc2.folders.get(t, leaf.id)).rejects.toMatchObject({ status: 404 });
    // tenant isolation
    expect((await svc.folders.list(eve, null, page())).items.map((f) => f.name)).not.toContain("Alpha");
    await expect(svc.folders.create(eve, { name: "x", parentId: top.id })).rejects.toMatchObject({ status: 404 });
    await expect(svc.prompts.create(eve, { name: "x", template: "x", folderId: top.id })).rejects.toMatchObject({ status: 404 });
    await expect(svc.folders.delete(eve, top.id)).rejects.toMatchObject({ status: 404 });
  });

  test("chains: create, list newest first, replace, delete; execute reads the stored steps; other tenants see none", async () => {
    const t = { tenantId: "tc", sub: "cy" };
    const c1 = await svc.chains.create(t, { name: "one", steps: [{ modelId: "m1" }, { modelId: "m2", transform: "template", template: "Q: {{input}}" }] });
    const c2 = await svc.chains.create(t, { name: "two", steps: [{ modelId: "m1" }] });
    expect((await svc2.chains.get(t, c1.id)).steps).toEqual([
      { modelId: "m1", transform: "passThrough" },
      { modelId: "m2", transform: "template", template: "Q: {{input}}" },
    ]);
    const listed = await svc2.chains.list(t, page());
    expect(listed.total).toBe(2);
    expect(new Set(listed.items.map((c) => c.id))).toEqual(new Set([c1.id, c2.id]));
    expect((await svc.chains.replace(t, c2.id, { name: "two'", steps: [{ modelId: "m9" }] })).name).toBe("two'");
    expect(await svc2.chains.execute(t, c1.id, [{ role: "user", content: "hi" }])).toMatchObject({ output: "echo Q: echo hi" });
    await expect(svc.chains.get(eve, c1.id)).rejects.toMatchObject({ status: 404 });
    await expect(svc.chains.replace(eve, c1.id, { name: "x", steps: [{ modelId: "m" }] })).rejects.toMatchObject({ status: 404 });
    await expect(svc.chains.delete(eve, c1.id)).rejects.toMatchObject({ status: 404 });
    expect((await svc.chains.list(eve, page())).total).toBe(0);
    await svc.chains.delete(t, c2.id);
    await expect(svc2.chains.get(t, c2.id)).rejects.toMatchObject({ status: 404 });
  });

  test("transactions under concurrency from two replicas: one name gets distinct slugs; concurrent new versions are numbered without gaps or duplicates", async () => {
    const t = { tenantId: "tx", sub: "xi" };
    const created = await Promise.all(Array.from({ length: 6 }, (_, i) => (i % 2 ? svc : svc2).prompts.create(t, { name: "Same Name", template: `t${i}` })));
    expect(created.map((p) => p.slug).sort()).toEqual(["same-name", "same-name-2", "same-name-3", "same-name-4", "same-name-5", "same-name-6"]);
    const p = created[0]!;
    const versions = await Promise.all(Array.from({ length: 6 }, (_, i) => (i % 2 ? svc : svc2).prompts.addVersion(t, p.id, { template: `v${i}` })));
    expect(versions.map((v) => v.version).sort((x, y) => x - y)).toEqual([2, 3, 4, 5, 6, 7]);
    const cur = await svc.prompts.get(t, p.id);
    expect(cur.currentVersion).toBe(7);
    // the prompt's current template is the one of its newest version
    expect(cur.template).toBe(versions.find((v) => v.version === 7)!.template);
    expect((await svc2.prompts.listVersions(t, p.id, page())).total).toBe(7);
    // a folder deleted while a prompt is created into it on the other replica: never both (no prompt in a missing folder)
    for (let i = 0; i < 4; i++) {
      const f = await svc.folders.create(t, { name: `race${i}` });
      const [del, made] = await Promise.allSettled([svc.folders.delete(t, f.id), svc2.prompts.create(t, { name: `in race${i}`, template: "x", folderId: f.id })]);
      expect([del.status, made.status].sort()).toEqual(["fulfilled", "rejected"]);
      const folderLeft = await svc.folders.get(t, f.id).then(() => true, () => false);
      expect(folderLeft).toBe(made.status === "fulfilled");
    }
  });
});

eachBackend("prompts-migrations", (b) => {
  test("a database migrated up to 0001 with prompts and runs in it: 0002 fills search_text, 0003 keeps the runs' order", async () => {
    const s = await b.open();
    await s.migrate([{ domain: "prompts", migrations: PROMPTS_MIGRATIONS.filter((m) => m.id === "0001_tables") }]);
    const g = s.global("test: rows as the build before 0002 wrote them");
    await g.run(
      `INSERT INTO prompts (id, tenant_id, name, slug, description, template, variables, model, temperature, max_tokens, tags, folder_id, status, current_version, created_by, created_at, updated_at)
       VALUES ('p-old', 'ta', 'Überblick', 'uberblick', 'ÅRSRAPPORT', 'x', '[]', NULL, 0.1, NULL, '[]', NULL, 'DRAFT', 1, 'alice', '2020-01-01T00:00:00.000Z', '2020-01-01T00:00:00.000Z')`,
    );
    await g.run(
      `INSERT INTO prompt_versions (id, tenant_id, prompt_id, version, template, variables, created_by, created_at)
       VALUES ('v-old', 'ta', 'p-old', 1, 'x', '[]', 'alice', '2020-01-01T00:00:00.000Z')`,
    );
    for (const id of ["r1", "r2", "r3"])
      await g.run(
        `INSERT INTO prompt_runs (id, tenant_id, prompt_id, version, status, variables, rendered_prompt, created_by, created_at)
         VALUES ($id, 'ta', 'p-old', 1, 'DRY_RUN', '{}', 'x', 'alice', '2020-01-01T00:00:00.000Z')`,
        { id },
      );
    await s.migrate(SETS);
    expect(await s.pendingMigrations()).toEqual([]);
    const svc = promptServices(s, new RecordingGateway());
    expect((await svc.prompts.list(alice, { search: "überblick" }, page())).items.map((p) => [p.id, p.temperature])).toEqual([["p-old", 0.1]]);
    expect((await svc.prompts.list(alice, { search: "årsrapport" }, page())).total).toBe(1);
    const r4 = await svc.runs.execute(alice, "p-old", { dryRun: true });
    // r1..r3 share one timestamp: SQLite keeps their insertion order (rowid → seq); PostgreSQL had
    // none to keep (copied rows bring their seq along) and falls back to the id
    const order = (await svc.runs.listRuns(alice, "p-old", {}, page())).items.map((r) => r.runId);
    expect(order[0]).toBe(r4.runId);
    expect(order.slice(1)).toEqual(["r3", "r2", "r1"]);
  });
});
