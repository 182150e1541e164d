/**
 * Operational domain (doc1 §4.1): /health, /ready, /metrics, /stats, the information document at
 * /, /openapi.json and /docs. Public (no tenant data). No tables.
 */
import { Elysia } from "elysia";
import type { Domain } from "../core/domain";
import { opsRoutes, readiness, stats, SERVICE, type OpsDeps, type ReadinessCheck } from "./routes";
import { docsRoutes } from "./docs";

export { readiness, stats, SERVICE, type OpsDeps, type ReadinessCheck };
export { OPS_SECTIONS, type ReadinessConfig, type MetricsConfig } from "./config";
export { UpstreamProbes } from "./probes";
export type { UpstreamProbe } from "./ports";

export function create(deps: OpsDeps & { openapi: () => unknown }): Domain<{ readiness: () => ReturnType<typeof readiness> }> {
  return {
    name: "ops",
    migrations: [],
    routes: new Elysia({ name: "svc-ops" }).use(opsRoutes(deps)).use(docsRoutes(deps.kernel, deps.openapi, SERVICE)),
    service: { readiness: () => readiness(deps.readiness) },
    start: () => deps.probes?.start(),
    close: () => deps.probes?.stop(),
  };
}
