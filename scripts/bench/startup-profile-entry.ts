/**
 * Entry of the start-up profiler's executable (scripts/bench/startup-profile.ts builds and runs
 * it). Repeats startServer's steps (src/server.ts) with performance.now() marks (ms since process
 * start) and the process's CPU time, printed as JSON: listen, each part of the app's modules,
 * each step of createApp (appSteps), then the first requests in-process. No top-level await:
 * --bytecode builds CommonJS.
 */
import { loadConfig } from "../../src/config";
import { APP_MODULES, earlyHealth } from "../../src/server";

/** Process CPU time in ms (user + system, all threads). */
const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const marks: Array<[string, number, number]> = [["process start -> entry's modules loaded (config, server)", performance.now(), cpuMs()]];
const mark = (what: string) => marks.push([what, performance.now(), cpuMs()]);

async function child() {
  const config = loadConfig();
  mark("loadConfig");
  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (r) => earlyHealth(r) ?? new Response("building", { status: 503 }) });
  mark("Bun.serve listening (/health answered from here)");
  for (const [name, load] of APP_MODULES) {
    await load();
    mark(`modules: ${name}`);
  }
  const { appSteps, startApp, closeApp } = await import("../../src/app");
  mark("modules: app");
  const steps = appSteps(config);
  let step = steps.next();
  while (!step.done) {
    if (typeof step.value === "string") {
      mark(`createApp: ${step.value}`);
      step = steps.next();
    } else step = steps.next(await step.value);
  }
  const app = step.value;
  mark("createApp: Elysia compose, native routes installed");
  server.reload({ routes: app.bunRoutes, fetch: (r) => app.fetch(r) });
  mark("server.reload (the app serves)");
  startApp(app);
  mark("startApp (background work: embedder load scheduled, timers)");
  await (await app.fetch(new Request("http://127.0.0.1/health"))).text();
  mark("app.fetch(GET /health) in-process, 1st (the route's handler is composed)");
  await (await app.fetch(new Request("http://127.0.0.1/ready"))).text();
  mark("app.fetch(GET /ready) in-process, 1st");
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
