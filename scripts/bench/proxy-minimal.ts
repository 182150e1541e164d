/**
 * Bench helper process: the least a Bun proxy can do — Bun.serve reads the request body, fetch
 * sends it to the upstream, the answer goes back. No auth, accounting, validation or coalescing.
 * The floor proxy-floor.ts measures svc against. Args: port, upstream base URL.
 */
const [port, upstream] = [Number(process.argv[2]), process.argv[3]!];
Bun.serve({
  hostname: "127.0.0.1",
  port,
  async fetch(req) {
    const r = await fetch(`${upstream}${new URL(req.url).pathname}`, { method: "POST", headers: { "content-type": "application/json", authorization: "Bearer sk-bench" }, body: await req.text() });
    return new Response(await r.text(), { status: r.status, headers: { "content-type": r.headers.get("content-type") ?? "application/json" } });
  },
});
console.log("listening");
