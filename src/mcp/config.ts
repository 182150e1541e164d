/**
 * The MCP gateway's configuration section (`SVC_MCP__*`).
 *
 *   SVC_MCP__STDIO_COMMANDS='{"everything": {"command": "node", "args": ["server.js", "stdio"]}}'
 *
 * STDIO servers are started by svc itself, so an API caller may only name an entry of this
 * operator allow-list (`stdio://<name>`); credentials of upstream servers are read from
 * environment variables whose names start with `secret_env_prefix`, so a tenant can never make
 * svc send one of its own settings (SVC_AUTH__JWT_SECRET, provider keys) to a server it controls.
 */
import { Type as T, type Static } from "@sinclair/typebox";
import { Section } from "../core/config";

const StdioCommand = T.Object({
  command: T.String({ minLength: 1 }),
  args: T.Optional(T.Array(T.String())),
  /** extra environment of the process (added to the SDK's safe default environment) */
  env: T.Optional(T.Record(T.String(), T.String())),
  /** working directory (default: svc's) */
  cwd: T.Optional(T.String()),
});

export const MCP_SECTIONS = {
  mcp: Section({
    /** allow-listed STDIO servers: name -> {command, args, env, cwd} (YAML or JSON map) */
    stdio_commands: T.Record(T.String({ pattern: "^[A-Za-z0-9._-]{1,64}$" }), StdioCommand, { default: {} }),
    /** environment variables named in authConfig (valueEnv, clientSecretEnv) must start with this */
    secret_env_prefix: T.String({ default: "MCP_SECRET_", minLength: 1 }),
    /** MTLS certPath/keyPath/caPath must lie inside this directory; unset = MTLS servers are refused */
    mtls_dir: T.Optional(T.String({ minLength: 1 })),
    /** seconds between background health checks of every enabled server (0 = no background checks) */
    health_interval_secs: T.Integer({ default: 60, minimum: 0 }),
    /** a successful check slower than this marks the server DEGRADED */
    degraded_latency_ms: T.Integer({ default: 2_000, minimum: 1 }),
    /** consecutive failed checks before a server is DOWN (fewer: DEGRADED) */
    down_after_failures: T.Integer({ default: 3, minimum: 1 }),
    /** timeout of one protocol round trip (health, discovery) and of one tool call upstream */
    request_timeout_ms: T.Integer({ default: 30_000, minimum: 1 }),
    /** a CONNECTED connection without a heartbeat for this long goes DISCONNECTED (0 = never) */
    heartbeat_timeout_secs: T.Integer({ default: 90, minimum: 0 }),
    /** largest tool result stored in the cache (bytes of JSON); larger results are served, not stored */
    max_result_bytes: T.Integer({ default: 1_048_576, minimum: 1_024 }),
    /** estimated cost of one upstream tool call (USD) — what a cache hit saves in analytics */
    cost_per_call_usd: T.Number({ default: 0.001, minimum: 0 }),
    /** concurrent sockets on /api/v1/mcp/connections/events (doc2 §8) */
    max_connection_event_sockets: T.Integer({ default: 100, minimum: 1 }),
  }),
};

export type McpConfig = Static<(typeof MCP_SECTIONS)["mcp"]>;
export type StdioCommandConfig = Static<typeof StdioCommand>;
