/**
 * The import rules of the layers (docs/architecture.md), checked by `npm test`:
 *   storage -> core -> domains (src/<domain>/) -> the composition root (app.ts, config.ts, server.ts, main.ts)
 * Every import points down; no cycles, type-only imports included; a domain imports only core,
 * storage and itself (what it needs from another domain it declares as a port in its own folder).
 */
const DOMAIN = "^src/(?!core/|storage/)([^/]+)/";
module.exports = {
  forbidden: [
    {
      name: "no-cycles",
      severity: "error",
      comment: "Import cycles, type-only imports included, are not allowed anywhere.",
      from: { path: "^src/" },
      to: { circular: true },
    },
    {
      name: "storage-knows-nothing-above",
      severity: "error",
      comment: "storage knows no core, no domain and no composition root.",
      from: { path: "^src/storage/" },
      to: { path: "^src/(?!storage/)" },
    },
    {
      name: "core-knows-no-domain",
      severity: "error",
      comment: "core imports only storage and core (no domain, no app context).",
      from: { path: "^src/core/" },
      to: { path: "^src/(?!core/|storage/)" },
    },
    {
      name: "domains-import-core-storage-and-themselves",
      severity: "error",
      comment: "A domain imports only core, storage and its own folder; another domain's needs are a port it declares.",
      from: { path: DOMAIN },
      to: { path: "^src/", pathNot: ["^src/core/", "^src/storage/", "^src/$1/"] },
    },
    {
      name: "only-main-imports-server",
      severity: "error",
      comment: "The composition root is imported by nothing below it.",
      from: { path: "^src/(core|storage)/|" + DOMAIN },
      to: { path: "^src/(app|config|server|main)\\.ts$" },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    tsPreCompilationDeps: true,
    parser: "swc",
    exclude: { path: "node_modules" },
    includeOnly: "^src/",
  },
};
