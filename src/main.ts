#!/usr/bin/env bun
/**
 * svc command line: `serve` (default), `token`, `keys create|list|revoke`, `storage copy`.
 * See CONTRACT.md (Commands).
 */
import { parseArgs } from "node:util";
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import type { Config } from "./config";
import pkg from "../package.json";
// Everything else is imported by the command that needs it: `--help`, `--version` and the key and
// token commands do not pay for loading the gateway (the whole app's modules cost ~0.4 s of CPU).

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
  svc storage copy --to postgres://…             copy the SQLite database into PostgreSQL
  svc --version                                  print the version
  svc <command> --help                           help for one command

The data directory is the directory of SVC_STORAGE__PATH (default ./data/svc.db, resolved against
the working directory): the database, the generated JWT secret and the cache index files. With
SVC_STORAGE__URL=postgres://… the database is PostgreSQL, shared by the gateway's replicas.
`;

const DATA_NOTE = `
Data: SVC_STORAGE__PATH (default ./data/svc.db, resolved against the working directory) names the
gateway's database; run the command with the same SVC_STORAGE__PATH (and SVC_AUTH__JWT_SECRET, if
set) as the running gateway. On PostgreSQL, run it with the replicas' SVC_STORAGE__URL (and
SVC_STORAGE__SCHEMA), SVC_AUTH__JWT_SECRET and SVC_IDENTITY__SSO__SECRET_KEY (exit 78 when one is
missing or differs from the replicas'; 69 when the database cannot be reached).
`;

const HELP: Record<string, string> = {
  serve: `svc serve — start the gateway (the default command)

Usage: svc [serve]

Listens on SVC_SERVER__HOST:SVC_SERVER__PORT (0.0.0.0:8080). Settings: SVC_* environment
variables, or a YAML file named by SVC_CONFIG (docs/config.example.yaml lists every setting).
Logs the resolved data directory and each provider's effective base URL at start.
SIGTERM/SIGINT: stop accepting, finish in-flight requests, close the database.
${DATA_NOTE}`,
  token: `svc token — print a signed access token (JWT, HS256)

Usage: svc token --tenant T [--sub S] [--permissions P1,P2] [--ttl 24h]

  --tenant T          the token's tenant_id (required)
  --sub S             the token's subject (e.g. user:<id>)
  --permissions P,..  ViewMetrics, ManageConfig, ManageKeys, ViewKeys, ViewLogs, WorkspaceAdmin
  --ttl D             lifetime: seconds or 30m, 24h, 7d (default SVC_AUTH__TOKEN_TTL_SECS)

Signed with SVC_AUTH__JWT_SECRET, else with the secret the gateway generated into its data
directory; without either it refuses (a fresh secret would mint tokens the gateway rejects).
On PostgreSQL (SVC_STORAGE__URL) only SVC_AUTH__JWT_SECRET, checked against the fingerprint the
replicas recorded in the database (needs SVC_STORAGE__URL only, not the SSO secret key).
${DATA_NOTE}`,
  keys: `svc keys — manage API keys (stored hashed in the gateway's database)

Usage:
  svc keys create --tenant T --name N [--permissions P1,P2] [--team TEAM_ID]
  svc keys list --tenant T
  svc keys revoke --tenant T --id ID

create prints the key once (stdout); --team makes a virtual key counted against that team's
budget. list prints JSON records without the keys. revoke stops a key (other processes: within 5 s).
list and revoke need the gateway's existing database; create creates one only where
SVC_STORAGE__PATH names it explicitly. On PostgreSQL (SVC_STORAGE__URL) they use the replicas'
database, migrating it first if this build is newer (under the replicas' advisory lock).
${DATA_NOTE}`,
  storage: `svc storage — move the gateway's database

Usage: svc storage copy --to postgres://USER:PASSWORD@HOST:PORT/DATABASE [--to-schema NAME]

copy    copies every table of the SQLite database at SVC_STORAGE__PATH into PostgreSQL: brings
        the SQLite file to this build's schema, migrates the target (safe beside running
        replicas: migrations take an advisory lock), copies the rows (rows already there are
        kept, so running it again adds nothing), then prints one line per table (table, rows
        in the source, rows in the target) and a total.
  --to URL          the PostgreSQL database; without --to, SVC_STORAGE__URL (keeps the password
                    out of the process list)
  --to-schema NAME  the schema svc's tables live in there (default: SVC_STORAGE__SCHEMA, else the
                    server's search_path, normally public)

Stop the gateway (or its writes) first: rows written during the copy are found by the next run.
The node's JWT secret and SSO secret key (SVC_AUTH__JWT_SECRET / SVC_IDENTITY__SSO__SECRET_KEY, else
the jwt-secret and sso-secret-key files beside its database) go with its data: their fingerprints
are recorded in the target, whose replicas must be started with the same values (sealed SSO
secrets and invitation links depend on them); a target whose replicas use others is refused.
svc_secrets is the target's own table (0 rows in a SQLite node): its count is shown, not compared.
Exit status: 0 every table's counts are equal; 1 a count differs (the tables are named) or the
copy failed; 66 no SQLite database at SVC_STORAGE__PATH; 69 PostgreSQL cannot be reached or
refuses the login; 78 a wrong --to or --to-schema, or the target's replicas use other secrets.
The URL's password is never printed.
Then start the gateway with SVC_STORAGE__URL (and SVC_STORAGE__SCHEMA) set to the same values.
`,
};

/**
 * The last start-up line: where the API reference (and the dashboard, when a domain serves /ui) is,
 * and the command that mints a first credential (stdout = the key alone, so KEY=$(...) captures it).
 */
function nextSteps(base: string, domains: { routes?: { routes: { path: string }[] }; native?: Record<string, unknown> }[]) {
  const serves = (path: string) => domains.some((d) => d.routes?.routes.some((r) => r.path === path) || (d.native && path in d.native));
  return {
    docs: `${base}/docs`,
    ...(serves("/ui") ? { dashboard: `${base}/ui` } : {}),
    credential: "KEY=$(npm start --silent -- keys create --tenant acme --name admin --permissions WorkspaceAdmin)  (binary: svc keys create ...; same SVC_STORAGE__PATH)",
    then: `curl -H "authorization: Bearer $KEY" ${base}/api/v1/cache/stats  (guides: README.md, docs/)`,
  };
}

/** The data directory as it resolves from here: what the CLI and the server log and check. */
function dataPaths(config: Config, cwd = process.cwd()) {
  const database = config.storage.path === ":memory:" ? ":memory:" : resolve(cwd, config.storage.path);
  const directory = database === ":memory:" ? undefined : dirname(database);
  return { database, directory, jwtSecretFile: directory ? join(directory, "jwt-secret") : undefined };
}

class StateMissing extends Error {}

/** A command that works on the gateway's existing state refuses to create a fresh one elsewhere. */
function requireDatabase(config: Config, explicit: boolean, what: string) {
  const { database } = dataPaths(config);
  if (database === ":memory:" || existsSync(database) || explicit) return;
  throw new StateMissing(
    `${what}: no svc database at ${database} (SVC_STORAGE__PATH=${config.storage.path}, resolved against ${process.cwd()}).\n` +
      `Run it where the gateway runs (a gateway that never started has no database yet: start it once), or set SVC_STORAGE__PATH to the gateway's database (an absolute path); nothing was created.`,
  );
}

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
      to: { type: "string" },
      "to-schema": { type: "string" },
      help: { type: "boolean", short: "h" },
      version: { type: "boolean", short: "v" },
    },
  });
  const [cmd = "serve", sub] = positionals;
  if (values.version || cmd === "version") return void process.stdout.write(`svc ${pkg.version}\n`);
  if (cmd === "help") return void process.stdout.write((sub && HELP[sub]) || USAGE);
  if (values.help) return void process.stdout.write((positionals[0] && HELP[positionals[0]]) || USAGE);
  const { loadConfig, unknownSettings } = await import("./config");
  const { Logger } = await import("./core/log");
  const config = loadConfig();
  // the operator named the database (SVC_STORAGE__PATH or the YAML file) rather than relying on the working directory
  const explicitPath = process.env.SVC_STORAGE__PATH !== undefined || config.storage.path !== "./data/svc.db";
  const log = new Logger("info", (l) => process.stderr.write(l + "\n"));

  if (cmd === "serve") {
    // first: an error escaping every handler is logged as JSON before anything else (src/core/fatal.ts)
    const { installFatalHandlers } = await import("./core/fatal");
    const fatal = installFatalHandlers();
    // the socket listens (and answers /health) before the app's modules are loaded (src/server.ts)
    const { startServer } = await import("./server");
    const starting = startServer(config);
    // SIGTERM/SIGINT from the moment /health answers: one that arrives while the app is still
    // built stops it once built (requests that waited are served); a failed start exits below
    let signals = 0;
    const shutdown = async (signal: string) => {
      if (++signals > 1) process.exit(1);
      const running = await starting.catch(() => undefined);
      if (!running) return;
      running.ctx.log.info("shutting down", { signal });
      await running.stop();
      process.exit(0);
    };
    process.on("SIGTERM", () => void shutdown("SIGTERM"));
    process.on("SIGINT", () => void shutdown("SIGINT"));
    const running = await starting;
    const [{ effectiveBaseUrls, PROVIDER_NAMES }, { embeddingsUrl }] = await Promise.all([import("./gateway"), import("./embedding/remote")]);
    fatal.setShutdown(() => running.stop());
    running.ctx.log.info("svc listening", { url: `http://${config.server.host}:${running.port}`, version: pkg.version });
    const data = dataPaths(config);
    running.ctx.log.info("data directory", {
      directory: data.directory ?? null,
      database: data.database,
      jwt_secret: config.auth.jwt_secret ? "SVC_AUTH__JWT_SECRET" : data.jwtSecretFile,
      cache_index: config.cache.index_dir ? resolve(config.cache.index_dir) : data.directory ? join(data.directory, "cache-index") : null,
    });
    running.ctx.log.info("upstreams", {
      providers: effectiveBaseUrls(config.providers),
      keys: Object.fromEntries(PROVIDER_NAMES.map((p) => [p, config.providers[p].api_key ? "configured" : "none (callers' own keys only)"])),
      embedding: config.embedding.provider === "openai" && config.embedding.base_url ? embeddingsUrl(config.embedding.base_url) : "local model",
    });
    const unknown = unknownSettings();
    if (unknown.length) running.ctx.log.warn("ignoring environment variables that name no setting", { variables: unknown });
    running.ctx.log.info("next steps", nextSteps(running.url, running.ctx.domains));
    return;
  }
  if (cmd === "storage") {
    if (sub !== "copy") throw new Error(`unknown storage subcommand "${sub ?? ""}"\n\n${HELP.storage}`);
    const { storageCopy } = await import("./cli-storage");
    await storageCopy(config, { to: values.to, toSchema: values["to-schema"], out: (l) => process.stdout.write(l + "\n"), err: (l) => process.stderr.write(l + "\n") });
    return;
  }
  const need = (v: string | undefined, flag: string) => {
    if (!v) throw new Error(`${flag} is required\n\n${USAGE}`);
    return v;
  };
  const { TokenService, parsePermissions, resolveJwtSecret } = await import("./core/auth");
  if (cmd === "token") {
    if (config.storage.url) {
      // a shared database: the secret comes from configuration and must be the replicas' (cli-postgres.ts)
      const { checkSharedJwtSecret } = await import("./cli-postgres");
      await checkSharedJwtSecret(config);
    } else if (!config.auth.jwt_secret) {
      const { jwtSecretFile } = dataPaths(config);
      if (jwtSecretFile && !existsSync(jwtSecretFile))
        throw new StateMissing(
          `token: SVC_AUTH__JWT_SECRET is not set and the gateway's generated secret is not at ${jwtSecretFile} (the data directory of SVC_STORAGE__PATH=${config.storage.path}, resolved against ${process.cwd()}).\n` +
            `A new secret would mint tokens the running gateway refuses: set SVC_STORAGE__PATH to the gateway's database (an absolute path), or SVC_AUTH__JWT_SECRET to its secret; nothing was created.`,
        );
    }
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
    if (sub !== "create" && sub !== "list" && sub !== "revoke") throw new Error(`unknown keys subcommand "${sub ?? ""}"\n\n${HELP.keys}`);
    // the arguments first: a usage error neither opens nor migrates the database (nor pays for building the app)
    const tenant = need(values.tenant, "--tenant");
    const name = sub === "create" ? need(values.name, "--name") : undefined;
    const permissions = sub === "create" ? parsePermissions(values.permissions) : undefined;
    const id = sub === "revoke" ? need(values.id, "--id") : undefined;
    // on PostgreSQL the database is the replicas' (migrated under their lock if this build is newer)
    if (!config.storage.url) requireDatabase(config, sub === "create" && explicitPath, `keys ${sub}`);
    const { createAppAsync, closeApp } = await import("./app");
    const app = await createAppAsync(config, { logger: log });
    try {
      const keys = app.apiKeys;
      if (sub === "create") {
        const created = await app.identity.keys.create(tenant, { name: name!, permissions, teamId: values.team });
        const team = created.teamId ? ` in team ${created.teamId}` : "";
        process.stderr.write(`created API key ${created.id} (${created.name}) for tenant ${tenant}${team}; it is shown only once:\n`);
        process.stdout.write(created.key + "\n");
      } else if (sub === "list") {
        process.stdout.write(JSON.stringify(await keys.list(tenant), null, 2) + "\n");
      } else if (sub === "revoke") {
        await keys.revoke(tenant, id!);
        process.stderr.write("revoked\n");
      } else throw new Error(`unknown keys subcommand "${sub ?? ""}"\n\n${USAGE}`);
    } finally {
      await closeApp(app);
    }
    return;
  }
  throw new Error(`unknown command "${cmd}"\n\n${USAGE}`);
}

main(process.argv.slice(2)).catch(async (e) => {
  const { ConfigError } = await import("./config");
  const msg = e instanceof ConfigError ? `configuration error: ${e.message}` : (e as Error).message ?? String(e);
  process.stderr.write(msg + "\n");
  // 78 EX_CONFIG: a setting is wrong; 66 EX_NOINPUT: the state the command needs is not where the settings point
  // a command may name its own status (cli-postgres.ts); 69 EX_UNAVAILABLE: the database cannot be reached
  const own = (e as { exitCode?: unknown }).exitCode;
  const unavailable = (e as Error)?.name === "StorageUnavailableError";
  process.exit(e instanceof ConfigError ? 78 : e instanceof StateMissing ? 66 : typeof own === "number" ? own : unavailable ? 69 : 1);
});
