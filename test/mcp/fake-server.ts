/**
 * An in-process MCP server built with the official server SDK, on loopback: both protocol eras
 * (2026-07-28 per request, 2025 by the stateless legacy leg), tools/list paginated, annotated
 * read/destructive/idempotent tools, a tool answering isError, a tool that waits for a gate
 * (coalescing), and call counters so a test knows whether a call reached it.
 */
import { Server, createMcpHandler } from "@modelcontextprotocol/server";

export interface FakeTool {
  name: string;
  description?: string;
  inputSchema?: Record<string, unknown>;
  annotations?: Record<string, unknown>;
}

const obj = (props: Record<string, unknown>, required: string[] = []) => ({ type: "object", properties: props, required });

export const DEFAULT_TOOLS: FakeTool[] = [
  { name: "list_issues", description: "Lists issues of a repository", inputSchema: obj({ repo: { type: "string" }, issue_id: { type: "string", description: "only this issue" } }), annotations: { readOnlyHint: true } },
  { name: "get_issue", description: "Gets one issue", inputSchema: obj({ issue_id: { type: "string" } }, ["issue_id"]), annotations: { readOnlyHint: true } },
  { name: "get_comment", description: "Returns a comment of an issue", inputSchema: obj({ comment_id: { type: "string" } }, ["comment_id"]) },
  { name: "update_issue", description: "Changes an issue", inputSchema: obj({ issue_id: { type: "string" }, title: { type: "string" } }, ["issue_id"]), annotations: { readOnlyHint: false, destructiveHint: true } },
  { name: "set_label", description: "Sets a label", inputSchema: obj({ issue_id: { type: "string" }, label: { type: "string" } }), annotations: { readOnlyHint: false, idempotentHint: true } },
  { name: "flaky_read", description: "Reads, but fails", inputSchema: obj({ q: { type: "string" } }), annotations: { readOnlyHint: true } },
  { name: "slow_read", description: "Reads slowly", inputSchema: obj({ q: { type: "string" } }), annotations: { readOnlyHint: true } },
  { name: "search_docs", description: "Searches documentation", inputSchema: obj({ query: { type: "string" }, limit: { type: "number" } }), annotations: { readOnlyHint: true } },
  { name: "frobnicate", description: "Does the thing", inputSchema: obj({}) },
];

export interface FakeMcpServer {
  url: string;
  port: number;
  tools: FakeTool[];
  /** calls that reached the server, per tool name */
  calls: Map<string, number>;
  /** tools/list pages served */
  listPages: number;
  /** resolve to let every waiting slow_read answer */
  release(): void;
  /** number of slow_read calls waiting */
  waiting(): number;
  /** resolves once `n` slow_read calls wait at the gate */
  whenWaiting(n: number): Promise<void>;
  stop(): Promise<void>;
}

export function startFakeMcpServer(opts: { pageSize?: number; tools?: FakeTool[]; path?: string } = {}): FakeMcpServer {
  const pageSize = opts.pageSize ?? 3;
  const path = opts.path ?? "/mcp";
  let gate: { promise: Promise<void>; resolve: () => void } = Promise.withResolvers<void>();
  let waiting = 0;
  const watchers: Array<{ n: number; resolve: () => void }> = [];
  const notify = () => {
    for (const w of [...watchers]) if (waiting >= w.n) (watchers.splice(watchers.indexOf(w), 1), w.resolve());
  };
  const state: Omit<FakeMcpServer, "url" | "port" | "stop"> = {
    tools: structuredClone(opts.tools ?? DEFAULT_TOOLS),
    calls: new Map(),
    listPages: 0,
    release() {
      gate.resolve();
      gate = Promise.withResolvers<void>();
    },
    waiting: () => waiting,
    whenWaiting(n) {
      const p = Promise.withResolvers<void>();
      watchers.push({ n, resolve: p.resolve });
      notify();
      return p.promise;
    },
  };
  const factory = () => {
    const server = new Server({ name: "fake-issues", version: "1.0.0" }, { capabilities: { tools: {} } });
    server.setRequestHandler("tools/list", async (request) => {
      state.listPages++;
      const start = Number(request.params?.cursor ?? 0);
      const page = state.tools.slice(start, start + pageSize).map((t) => ({ ...t, inputSchema: (t.inputSchema ?? { type: "object" }) as { type: "object" } }));
      const next = start + pageSize < state.tools.length ? String(start + pageSize) : undefined;
      return { tools: page, ...(next ? { nextCursor: next } : {}) };
    });
    server.setRequestHandler("tools/call", async (request) => {
      const name = request.params.name;
      const n = (state.calls.get(name) ?? 0) + 1;
      state.calls.set(name, n);
      const args = request.params.arguments ?? {};
      if (name === "flaky_read") return { content: [{ type: "text" as const, text: "upstream failure" }], isError: true };
      if (name === "slow_read") {
        waiting++;
        notify();
        await gate.promise;
        waiting--;
      }
      return { content: [{ type: "text" as const, text: `${name}#${n} ${JSON.stringify(args)}` }] };
    });
    return server;
  };
  const handler = createMcpHandler(factory, { legacy: "stateless" });
  const http = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: (r) => (new URL(r.url).pathname === path ? handler.fetch(r) : new Response("not found", { status: 404 })),
  });
  return {
    ...state,
    get tools() {
      return state.tools;
    },
    set tools(v) {
      state.tools = v;
    },
    get listPages() {
      return state.listPages;
    },
    url: `http://127.0.0.1:${http.port}${path}`,
    port: http.port!,
    async stop() {
      await handler.close();
      await http.stop(true);
    },
  };
}

/** Start @modelcontextprotocol/server-everything (a real server, 1.x SDK, legacy era) over HTTP or SSE on a free port. */
export async function startEverything(mode: "streamableHttp" | "sse"): Promise<{ url: string; stop(): void }> {
  const probe = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
  const port = probe.port!;
  await probe.stop(true);
  const proc = Bun.spawn(["node", EVERYTHING_JS, mode], { env: { ...process.env, PORT: String(port) }, stdout: "ignore", stderr: "pipe" });
  // ready when it says it listens (no timed wait)
  const reader = proc.stderr.getReader();
  let text = "";
  while (!/listening|running on port/i.test(text)) {
    const { done, value } = await reader.read();
    if (done) throw new Error(`server-everything exited: ${text}`);
    text += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  void proc.stderr.pipeTo(new WritableStream()).catch(() => {});
  return { url: `http://127.0.0.1:${port}${mode === "sse" ? "/sse" : "/mcp"}`, stop: () => proc.kill() };
}

export const EVERYTHING_JS = `${import.meta.dir}/../../node_modules/@modelcontextprotocol/server-everything/dist/index.js`;
