/**
 * MCP over HTTP on PostgreSQL: the registry, discovery, tools and calls; the tool cache.
 * (test/helpers/backend.ts: each file below runs again here, every gateway on a fresh PostgreSQL schema)
 */
import { onPostgres } from "../helpers/backend";

onPostgres("mcp/servers.test.ts", "mcp/toolcache.test.ts");
