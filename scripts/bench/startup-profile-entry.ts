/**
 * Entry of the start-up profiler's executable (scripts/bench/startup-profile.ts builds and runs
 * it). Static imports like src/main.ts (a dynamic import() changes how the bundler wraps modules
 * and how long their first calls take), then startServer's steps one by one with
 * performance.now() marks (ms since process start), printed as JSON. No top-level await:
 * --bytecode builds CommonJS.
 */
import { Elysia } from "elysia";
import { loadConfig } from "../../src/config";
import { createApp, startApp, closeApp } from "../../src/app";
import { Db } from "../../src/storage/db";

/** Process CPU time in ms (user + system, all threads; the embedder worker starts only after the last mark). */
const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const marks: Array<[string, number, number]> = [["process start -> all modules loaded and evaluated", performance.now(), cpuMs()]];
const mark = (what: string) => marks.push([what, performance.now(), cpuMs()]);

async function child() {
  const config = loadConfig();
  mark("loadConfig");
  if (process.env.PROFILE_FRESH_DB !== "0") {
    new Db(config.storage.path).close();
    mark("Db open on a new file (then closed; migrations run in createApp)");
  }
  if (process.env.PROFILE_OPS_FIRST) {
    const early = new Elysia().get("/health", () => ({ status: "ok" }));
    await (await early.fetch(new Request("http://127.0.0.1/health"))).text();
    mark("(a separate one-route Elysia app) first GET /health: Elysia's one-time warm-up");
  }
  const app = createApp(config);
  mark("createApp (Db, migrations, JWT, metrics, every domain, all routes)");
  const handle = app.fetch;
  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, routes: app.bunRoutes, fetch: (r) => handle(r) });
  mark("Bun.serve listening");
  startApp(app);
  mark("startApp (background work: embedder load scheduled, timers)");
  await (await handle(new Request("http://127.0.0.1/health"))).text();
  mark("app.handle(GET /health) in-process, 1st (the route's handler is composed)");
  await (await handle(new Request("http://127.0.0.1/health"))).text();
  mark("app.handle(GET /health) in-process, 2nd");
  await (await handle(new Request("http://127.0.0.1/ready"))).text();
  mark("app.handle(GET /ready) in-process, 1st");
  let prev = 0;
  let prevCpu = 0;
  const out = marks.map(([w, t, c]) => {
    const row = { what: w, at: +t.toFixed(2), step: +(t - prev).toFixed(2), cpu: +(c - prevCpu).toFixed(2) };
    prev = t;
    prevCpu = c;
    return row;
  });
  process.stdout.write(JSON.stringify(out) + "\n");
  server.stop(true);
  await closeApp(app);
  process.exit(0);
}

void child();
