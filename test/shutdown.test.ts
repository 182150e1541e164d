/**
 * Graceful shutdown of the real process: `bun src/main.ts` with a temp database, an in-flight
 * proxied request held open by a slow upstream (a fake provider in this test process), SIGTERM.
 * The in-flight request completes, new connections are refused, the process exits 0 and the
 * database was closed cleanly (WAL checkpointed and truncated).
 */
import { describe, expect, test, afterAll } from "bun:test";
import { mkdtempSync, rmSync, existsSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Database } from "bun:sqlite";
import { TEST_JWT_SECRET } from "./helpers/gateway";
import { listeningUrl } from "./helpers/listening";
import { ROOT } from "../scripts/bench/harness";
import { TokenService } from "../src/core/auth";

const BUN = process.execPath;

describe("graceful shutdown (SIGTERM)", () => {
  const dir = mkdtempSync(join(tmpdir(), "svc-shutdown-"));
  let upstreamHit: () => void;
  const upstreamCalled = new Promise<void>((r) => (upstreamHit = r));
  // a fake chat-completions provider that answers after 1.5 s
  const upstream = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const body = (await req.json()) as { stream?: boolean };
      if (body.stream) return slowStream();
      upstreamHit();
      await Bun.sleep(1500);
      return Response.json({
        id: "chatcmpl-1",
        object: "chat.completion",
        created: 1,
        model: "gpt-4o-mini",
        choices: [{ index: 0, message: { role: "assistant", content: "slow answer" }, finish_reason: "stop" }],
        usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 },
      });
    },
  });
  /** an SSE chat-completions stream: 6 chunks 250 ms apart, then [DONE] */
  let streamStarted: () => void;
  const streamCalled = new Promise<void>((r) => (streamStarted = r));
  function slowStream(): Response {
    const enc = new TextEncoder();
    const chunk = (delta: Record<string, unknown>, finish: string | null) =>
      `data: ${JSON.stringify({ id: "chatcmpl-s", object: "chat.completion.chunk", created: 1, model: "gpt-4o-mini", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    return new Response(
      new ReadableStream<Uint8Array>({
        async start(c) {
          streamStarted();
          c.enqueue(enc.encode(chunk({ role: "assistant", content: "" }, null)));
          for (let i = 0; i < 6; i++) {
            await Bun.sleep(250);
            c.enqueue(enc.encode(chunk({ content: `part${i} ` }, null)));
          }
          c.enqueue(enc.encode(chunk({}, "stop")));
          c.enqueue(enc.encode("data: [DONE]\n\n"));
          c.close();
        },
      }),
      { headers: { "content-type": "text/event-stream" } },
    );
  }
  afterAll(() => {
    upstream.stop(true);
    rmSync(dir, { recursive: true, force: true });
  });

  /**
   * `bun src/main.ts` over the database file dbPath, with the fake upstream as OpenAI, on a port the
   * child chooses (port 0; its "svc listening" line says which): a port found free beforehand can be
   * taken by another test worker before the child binds it, and the test would then talk to that
   * worker's server (a reset connection mid-test). Resolves once the app serves.
   */
  async function startProcess(dbPath: string, extraEnv: Record<string, string> = {}) {
    const proc = Bun.spawn([BUN, "src/main.ts"], {
      cwd: ROOT,
      env: {
        ...process.env,
        SVC_SERVER__HOST: "127.0.0.1",
        SVC_SERVER__PORT: "0",
        SVC_STORAGE__PATH: dbPath,
        SVC_AUTH__JWT_SECRET: TEST_JWT_SECRET,
        SVC_PROVIDERS__OPENAI__BASE_URL: `http://127.0.0.1:${upstream.port}`,
        SVC_SERVER__REQUEST_LOG: "false",
        SVC_SERVER__SHUTDOWN_TIMEOUT_MS: "10000",
        ...extraEnv,
      },
      stdout: "pipe",
      stderr: "pipe",
    });
    const url = await listeningUrl(proc);
    if (!url) {
      await proc.exited;
      console.error(await new Response(proc.stderr).text());
      throw new Error(`the gateway exited (${proc.exitCode}) before it listened`);
    }
    return { proc, url };
  }
  /** kill a process the test left running; print its stderr unless it exited 0 */
  async function reap(proc: Bun.Subprocess<"ignore", "pipe", "pipe">) {
    if (proc.exitCode === null) proc.kill("SIGKILL");
    const err = await new Response(proc.stderr).text();
    if (proc.exitCode !== 0) console.error(err);
  }

  test("in-flight request completes, new connections are refused, exit 0, WAL checkpointed", async () => {
    const dbPath = join(dir, "svc.db");
    const { proc, url } = await startProcess(dbPath);
    try {
      const token = await new TokenService(TEST_JWT_SECRET).sign({ tenantId: "shutdown-t", permissions: ["ManageConfig"] });
      // write something so the WAL has content to checkpoint
      expect((await fetch(`${url}/api/v1/rate-limits/shutdown-t`, { method: "PUT", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: JSON.stringify({ tier: "pro" }) })).status).toBe(200);

      const started = Date.now();
      const inflight = fetch(`${url}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "x-svc-skip-cache": "true" },
        body: JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "take your time" }] }),
      });
      await upstreamCalled; // the request is inside the gateway, waiting on the upstream
      proc.kill("SIGTERM");
      await Bun.sleep(200);

      // new connections are refused while the in-flight request drains (refused, not left waiting)
      const attempt: any = await fetch(`${url}/health`, { signal: AbortSignal.timeout(1000) }).then(
        (r) => ({ status: r.status }),
        (e) => ({ name: e?.name, code: e?.code }),
      );
      // refused outright, or (a connection the listener had already queued when it closed) reset: never served, never left waiting
      expect(attempt.name).toBe("TypeError");
      expect(["ECONNREFUSED", "ECONNRESET"]).toContain(attempt.code);

      const r = await inflight;
      expect(r.status).toBe(200);
      const body = ((await r.json()) as any);
      expect(body.choices[0].message.content).toBe("slow answer");
      expect(Date.now() - started).toBeGreaterThanOrEqual(1400);

      expect(await proc.exited).toBe(0);
      // closed cleanly: the WAL was checkpointed (truncated) and the data is in the main file
      const wal = dbPath + "-wal";
      expect(!existsSync(wal) || statSync(wal).size === 0).toBe(true);
      const db = new Database(dbPath, { readonly: true });
      expect(db.query("SELECT tier FROM rate_limit_tiers WHERE tenant_id = 'shutdown-t'").get()).toEqual({ tier: "pro" });
      db.close();
    } finally {
      await reap(proc);
    }
  }, 60_000);

  test("a stream in flight at SIGTERM is delivered whole (every chunk and [DONE]), then exit 0", async () => {
    const { proc, url } = await startProcess(join(dir, "stream.db"));
    try {
      const token = await new TokenService(TEST_JWT_SECRET).sign({ tenantId: "shutdown-s" });
      const r = await fetch(`${url}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "x-svc-skip-cache": "true" },
        body: JSON.stringify({ model: "gpt-4o-mini", stream: true, messages: [{ role: "user", content: "stream slowly" }] }),
      });
      expect(r.status).toBe(200);
      await streamCalled;
      const reader = r.body!.getReader();
      let text = new TextDecoder().decode((await reader.read()).value); // the first chunk has arrived
      proc.kill("SIGTERM");
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        text += new TextDecoder().decode(value);
      }
      for (let i = 0; i < 6; i++) expect(text).toContain(`part${i} `);
      expect(text.trimEnd().endsWith("data: [DONE]")).toBe(true);
      expect(await proc.exited).toBe(0);
    } finally {
      await reap(proc);
    }
  }, 60_000);

  test("SIGINT shuts down like SIGTERM, and SVC_SERVER__SHUTDOWN_TIMEOUT_MS cuts a stream that outlives it", async () => {
    const { proc, url } = await startProcess(join(dir, "cut.db"), { SVC_SERVER__SHUTDOWN_TIMEOUT_MS: "300" });
    try {
      const token = await new TokenService(TEST_JWT_SECRET).sign({ tenantId: "shutdown-c" });
      const r = await fetch(`${url}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "x-svc-skip-cache": "true" },
        body: JSON.stringify({ model: "gpt-4o-mini", stream: true, messages: [{ role: "user", content: "stream slowly" }] }),
      });
      expect(r.status).toBe(200);
      const reader = r.body!.getReader();
      let text = new TextDecoder().decode((await reader.read()).value);
      const signalled = Date.now();
      proc.kill("SIGINT");
      // the stream needs 1.5 s more; the deadline is 300 ms: the connection is closed under it
      for (;;) {
        const next = await reader.read().catch(() => ({ done: true, value: undefined }));
        if (next.done) break;
        text += new TextDecoder().decode(next.value);
      }
      expect(text).not.toContain("[DONE]");
      expect(text).not.toContain("part5 ");
      expect(await proc.exited).toBe(0);
      expect(Date.now() - signalled).toBeLessThan(1400); // well before the stream would have ended
    } finally {
      await reap(proc);
    }
  }, 60_000);
});
