/**
 * kill -9 of a replica under write load (issue 23): two real svc processes on one PostgreSQL schema,
 * clients writing through both (prompts, virtual keys, memory milestones into one shared project,
 * MCP registrations); replica B is SIGKILLed mid-load while A goes on. Every write that answered 2xx,
 * on either replica, is in the database afterwards and is read through the surviving replica.
 *
 * Usage records (and MCP call logs) are NOT acknowledged writes: they are written behind the answer
 * in batches (200 ms window, at most 500 rows: docs/deploy.md), so a kill -9 may lose the last
 * window of them by design. Only API writes that answered 2xx are checked here.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { SQL } from "bun";
import { dropSchema, freshSchema } from "../helpers/postgres";
import { startFakeUpstream, type FakeUpstream } from "../fake-upstream/server";
import { startFakeMcpServer, type FakeMcpServer } from "../mcp/fake-server";
import { call, replicaEnv, startReplicas, token, until, type Replica } from "./cluster";

const TENANT = "tenant-kill";
type Kind = "prompt" | "key" | "milestone" | "mcp";
const KINDS: Kind[] = ["prompt", "key", "milestone", "mcp"];

let fake: FakeUpstream;
let mcp: FakeMcpServer;
let db: { url: string; schema: string };
let replicas: Replica[] = [];
let admin: string;

beforeAll(async () => {
  fake = await startFakeUpstream();
  mcp = startFakeMcpServer();
  db = await freshSchema("kill");
  replicas = await startReplicas(2, { ...replicaEnv(db, fake.url), SVC_RATE_LIMITS__ENABLED: "false" });
  admin = await token(TENANT, ["WorkspaceAdmin"], "admin");
  expect((await call(replicas[0]!.url, "POST", "/api/v1/memory/projects", admin, { projectId: "load", name: "Load", roadmap: "kill -9" })).status).toBe(201);
}, 120_000);

afterAll(async () => {
  await Promise.all(replicas.map((r) => r.stop()));
  await fake?.stop();
  await mcp?.stop();
  if (db) await dropSchema(db.url, db.schema);
});

interface Ack {
  kind: Kind;
  id: string;
  replica: number;
}

/** one write of `kind` through `base`: its id when it answered 2xx */
async function write(base: string, kind: Kind, n: number): Promise<{ status: number; id?: string }> {
  const r =
    kind === "prompt"
      ? await call(base, "POST", "/api/v1/prompts", admin, { name: `load ${n}`, template: `prompt ${n}` })
      : kind === "key"
        ? await call(base, "POST", "/api/v1/virtual-keys", admin, { name: `load ${n}`, teamId: null })
        : kind === "milestone"
          ? await call(base, "POST", "/api/v1/memory/projects/load/store", admin, { branchPurpose: "load", cumulativeProgress: `up to ${n}`, thisContribution: `milestone ${n}`, agentId: `agent-${n % 3}` })
          : await call(base, "POST", "/api/v1/mcp/servers", admin, { name: `load-${n}`, url: mcp.url });
  if (r.status >= 300) return { status: r.status };
  const id = kind === "milestone" ? r.body.milestoneId : kind === "mcp" ? r.body.server.id : r.body.id;
  expect(typeof id).toBe("string");
  return { status: r.status, id };
}

test("kill -9 of one of two replicas under write load: every acknowledged write on either is in the database", async () => {
  const acks: Ack[] = [];
  const refused: Array<{ replica: number; status: number }> = [];
  const dropped: Array<{ replica: number; error: string }> = [];
  let n = 0;
  let running = true;
  const killed = { at: -1 };
  // four clients per replica, one request at a time each, cycling through the kinds
  const clients = Array.from({ length: 8 }, async (_, c) => {
    const replica = c % 2;
    while (running) {
      const i = n++;
      const kind = KINDS[i % KINDS.length]!;
      try {
        const r = await write(replicas[replica]!.url, kind, i);
        if (r.id) acks.push({ kind, id: r.id, replica });
        else refused.push({ replica, status: r.status });
      } catch (e) {
        // no answer: not acknowledged. Only the killed replica may fail to answer.
        dropped.push({ replica, error: String(e) });
        if (replica === 1 && killed.at >= 0) return;
        throw e;
      }
    }
  });
  const acked = (replica: number) => acks.filter((a) => a.replica === replica).length;
  try {
    await until("both replicas acknowledged writes", async () => acked(0) >= 20 && acked(1) >= 20, 60_000);
    killed.at = acks.length;
    replicas[1]!.proc.kill("SIGKILL");
    expect(await replicas[1]!.exited).not.toBe(0);
    const afterKill = acked(0);
    await until("the surviving replica goes on acknowledging writes", async () => acked(0) >= afterKill + 20, 60_000);
  } finally {
    running = false;
  }
  await Promise.all(clients);

  // A answered every request it got: a 2xx, or a 503 (e.g. a transaction that kept conflicting) — never a 500
  expect(refused.filter((r) => r.replica === 0 && r.status !== 503)).toEqual([]);
  expect(dropped.filter((d) => d.replica === 0)).toEqual([]);

  const sql = new SQL(db.url, { max: 1, connection: { search_path: db.schema } });
  const stored: Record<Kind, Set<string>> = { prompt: new Set(), key: new Set(), milestone: new Set(), mcp: new Set() };
  try {
    for (const r of (await sql`SELECT id FROM prompts WHERE tenant_id = ${TENANT}`) as Array<{ id: string }>) stored.prompt.add(r.id);
    for (const r of (await sql`SELECT id FROM api_keys WHERE tenant_id = ${TENANT}`) as Array<{ id: string }>) stored.key.add(r.id);
    for (const r of (await sql`SELECT milestone_id AS id FROM memory_milestones WHERE tenant_id = ${TENANT}`) as Array<{ id: string }>) stored.milestone.add(r.id);
    for (const r of (await sql`SELECT id FROM mcp_servers WHERE tenant_id = ${TENANT}`) as Array<{ id: string }>) stored.mcp.add(r.id);
    const lost = acks.filter((a) => !stored[a.kind].has(a.id));
    expect(lost).toEqual([]);
    // the milestones of the shared project are numbered without a gap or a duplicate, whichever replica stored them
    const seqs = ((await sql`SELECT sequence_number AS s FROM memory_milestones WHERE tenant_id = ${TENANT} ORDER BY sequence_number`) as Array<{ s: number }>).map((r) => Number(r.s));
    expect(seqs).toEqual(seqs.map((_, i) => i + 1));
  } finally {
    await sql.close();
  }
  // what B acknowledged before it died is read through A
  const fromB = acks.filter((a) => a.replica === 1);
  for (const a of fromB.filter((a) => a.kind === "prompt").slice(-5)) expect((await call(replicas[0]!.url, "GET", `/api/v1/prompts/${a.id}`, admin)).status).toBe(200);
  for (const a of fromB.filter((a) => a.kind === "milestone").slice(-5))
    expect((await call(replicas[0]!.url, "GET", `/api/v1/memory/projects/load/recall?view=milestone&milestoneId=${a.id}`, admin)).status).toBe(200);
  for (const a of fromB.filter((a) => a.kind === "mcp").slice(-5)) expect((await call(replicas[0]!.url, "GET", `/api/v1/mcp/servers/${a.id}`, admin)).status).toBe(200);
  console.log(
    `kill -9: ${acks.length} writes acknowledged (A ${acked(0)}, B ${acked(1)}), all stored; ${refused.length} refused (${[...new Set(refused.map((r) => r.status))].join(", ") || "none"}), ${dropped.length} unanswered on B`,
  );
}, 120_000);
