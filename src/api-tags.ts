/**
 * The capabilities of the API reference (/openapi.json, /docs): one tag per capability, in the
 * order a newcomer meets them, each with what it is for. Every operation carries exactly one of
 * these (test/openapi-docs.test.ts); /docs groups the operations under them in this order.
 */
import type { TagDoc } from "./core/openapi";

export const API_TAGS: TagDoc[] = [
  {
    name: "proxies",
    description:
      "The providers' own APIs (OpenAI, Anthropic, Gemini, Cohere) served unchanged for their SDKs: point the SDK's base URL at svc and use an svc key. Chat answers come from the semantic cache when a close enough request was answered before; the rest is forwarded to the provider.",
  },
  { name: "cache", description: "The response cache of the caller's tenant: statistics, entries, the learned hit decision's operating point, and a lookup that never calls a provider." },
  { name: "usage", description: "Tokens and cost of the tenant's proxied requests, with the savings of cache hits." },
  { name: "auth", description: "Getting an access token: an API key exchanged for a token, or sign-in with e-mail and password; password reset and the workspace's sign-in settings." },
  { name: "virtual-keys", description: "API keys for people and applications, optionally assigned to a team (whose budget they spend), with per-key analytics." },
  { name: "rate-limits", description: "The tenant's rate-limit tier (requests per second, minute and day, tokens per minute) and the tier presets." },
  { name: "prompts", description: "Versioned prompt templates: create, change (each template change is a new version), diff, roll back, and execute through the gateway (cache first), with the log of runs." },
  { name: "folders", description: "Folders that organise prompts into a tree." },
  { name: "chains", description: "Prompt chains: steps run in order through the gateway, each step's input the previous step's output shaped by its transform (pass through, extract a JSON field, fill a template)." },
  { name: "memory", description: "The Memory API: projects with branches, milestones (stored and searched by meaning and by words), roadmap, reasoning log and metrics; contributors, external sources and questions answered from memory." },
  { name: "mcp", description: "The MCP gateway: register MCP servers, discover their tools, call them through svc's tool cache (one endpoint, /mcp, for MCP clients), with entities and invalidation rules that keep cached results fresh." },
  { name: "tool-cache", description: "The MCP tool cache itself: cached tool results by key or by similarity, invalidation by entity, metrics." },
  { name: "users", description: "The workspace's users." },
  { name: "teams", description: "Teams of users: members, budgets and their spend, the virtual keys they own." },
  { name: "roles", description: "Roles (built-in and custom) and their assignment to users, optionally scoped and expiring." },
  { name: "permissions", description: "What a user, or the caller, may do, and which roles grant it." },
  { name: "invitations", description: "Inviting people by e-mail with a role; accepting sets the password they sign in with." },
  { name: "sso", description: "Single sign-on: OIDC and SAML connections, their verified e-mail domains, and the sign-in flow." },
  { name: "scim", description: "Administration of SCIM provisioning: the tokens an identity provider uses, its activity and statistics." },
  { name: "scim-provider", description: "The SCIM 2.0 service (RFC 7643/7644) identity providers call to provision users and groups, with a SCIM token." },
  { name: "dashboard", description: "The web dashboard at /ui: its page and assets, which hold no data; signed in, it shows usage, cache, keys, prompts, memory, teams and users from this API." },
  { name: "ops", description: "Operating svc: liveness and readiness probes, Prometheus metrics (optionally behind a scrape token), statistics across tenants and the information document." },
];
