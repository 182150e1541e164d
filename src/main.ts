#!/usr/bin/env bun
/**
 * svc command line: `serve` (default), `token`, `keys create|list|revoke`.
 * See CONTRACT.md (Commands).
 */
import { parseArgs } from "node:util";
import { loadConfig, ConfigError, unknownSettings } from "./config";
import { TokenService, parsePermissions, resolveJwtSecret } from "./core/auth";
import { createApp, closeApp } from "./app";
import { startServer } from "./server";
import { Logger } from "./core/log";
import { installFatalHandlers } from "./core/fatal";
import pkg from "../package.json";

const USAGE = `svc ${pkg.version} — LLM API gateway with a semantic response cache

Usage:
  svc [serve]                                    start the gateway (config: SVC_* env, SVC_CONFIG yaml)
  svc token --tenant T [--sub S] [--permissions P1,P2] [--ttl 24h]
                                                 print a signed access token
  svc keys create --tenant T --name N [--permissions P1,P2] [--team TEAM_ID]
                                                 create an API key and print it once (--team: a virtual
                                                 key of that team, counted against its budget)
  svc keys list --tenant T                       list a tenant's API keys (never the keys themselves)
  svc keys revoke --tenant T --id ID             revoke an API key
`;

function parseTtl(s: string): number {
  const m = /^(\d+)\s*([smhd]?)$/.exec(s.trim());
  if (!m) throw new Error(`--ttl: expected e.g. 3600, 30m, 24h or 7d, got "${s}"`);
  return Number(m[1]) * ({ "": 1, s: 1, m: 60, h: 3600, d: 86400 } as Record<string, number>)[m[2]!]!;
}

async function main(argv: string[]) {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      tenant: { type: "string" },
      sub: { type: "string" },
      permissions: { type: "string" },
      ttl: { type: "string" },
      name: { type: "string" },
      id: { type: "string" },
      team: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
  const [cmd = "serve", sub] = positionals;
  if (values.help || cmd === "help") return void process.stdout.write(USAGE);
  const config = loadConfig();
  const log = new Logger("info", (l) => process.stderr.write(l + "\n"));

  if (cmd === "serve") {
    // first: an error escaping every handler is logged as JSON before anything else (src/core/fatal.ts)
    const fatal = installFatalHandlers();
    const running = await startServer(config);
    fatal.setShutdown(() => running.stop());
    running.ctx.log.info("svc listening", { url: `http://${config.server.host}:${running.port}`, version: pkg.version });
    const unknown = unknownSettings();
    if (unknown.length) running.ctx.log.warn("ignoring environment variables that name no setting", { variables: unknown });
    let signals = 0;
    const shutdown = async (signal: string) => {
      if (++signals > 1) process.exit(1);
      running.ctx.log.info("shutting down", { signal });
      await running.stop();
      process.exit(0);
    };
    process.on("SIGTERM", () => void shutdown("SIGTERM"));
    process.on("SIGINT", () => void shutdown("SIGINT"));
    return;
  }
  const need = (v: string | undefined, flag: string) => {
    if (!v) throw new Error(`${flag} is required\n\n${USAGE}`);
    return v;
  };
  if (cmd === "token") {
    const tokens = new TokenService(resolveJwtSecret({ jwtSecret: config.auth.jwt_secret, dataPath: config.storage.path }, (m) => log.warn(m)), {
      ttlSecs: config.auth.token_ttl_secs,
      maxTtlSecs: config.auth.max_token_ttl_secs,
    });
    const token = await tokens.sign(
      { tenantId: need(values.tenant, "--tenant"), sub: values.sub, permissions: parsePermissions(values.permissions) },
      values.ttl ? parseTtl(values.ttl) : undefined,
    );
    process.stdout.write(token + "\n");
    return;
  }
  if (cmd === "keys") {
    const app = createApp(config, { logger: log });
    try {
      const keys = app.apiKeys;
      const tenant = need(values.tenant, "--tenant");
      if (sub === "create") {
        const created = app.identity.keys.create(tenant, { name: need(values.name, "--name"), permissions: parsePermissions(values.permissions), teamId: values.team });
        const team = created.teamId ? ` in team ${created.teamId}` : "";
        process.stderr.write(`created API key ${created.id} (${created.name}) for tenant ${tenant}${team}; it is shown only once:\n`);
        process.stdout.write(created.key + "\n");
      } else if (sub === "list") {
        process.stdout.write(JSON.stringify(keys.list(tenant), null, 2) + "\n");
      } else if (sub === "revoke") {
        keys.revoke(tenant, need(values.id, "--id"));
        process.stderr.write("revoked\n");
      } else throw new Error(`unknown keys subcommand "${sub ?? ""}"\n\n${USAGE}`);
    } finally {
      await closeApp(app);
    }
    return;
  }
  throw new Error(`unknown command "${cmd}"\n\n${USAGE}`);
}

main(process.argv.slice(2)).catch((e) => {
  const msg = e instanceof ConfigError ? `configuration error: ${e.message}` : (e as Error).message ?? String(e);
  process.stderr.write(msg + "\n");
  process.exit(e instanceof ConfigError ? 78 : 1);
});
