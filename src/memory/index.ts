/**
 * Memory API domain (doc1 §4.12, /api/v1/memory): git-like engineering memory for coding agents —
 * projects with a roadmap, milestones on branches (content-hash deduplicated, gap-free sequence
 * numbers), reasoning logs, branch abandon/merge, recall views, hybrid semantic + lexical search,
 * session metrics, promotion of cached answers to knowledge, contributors, external sources synced
 * from GitHub/Jira/Confluence/Slack, and intelligence answers written through the gateway.
 * Embeddings and completions come through ports (ports.ts); connectors call out through the
 * outbound URL policy. Tables: memory_* (migrations.ts).
 */
import { Elysia } from "elysia";
import { dirname, join } from "node:path";
import type { AsyncStorage } from "../storage/async";
import type { Kernel } from "../core/kernel";
import type { Domain } from "../core/domain";
import type { OutboundPolicy } from "../core/outbound";
import type { Bus } from "../core/hotstate";
import type { Completer, Embedder } from "./ports";
import type { MemoryConfig } from "./config";
import { MEMORY_MIGRATIONS } from "./migrations";
import { MemoryStore } from "./store";
import { Lexical } from "./lexical";
import { MemoryVectors } from "./vectors";
import { Retriever } from "./search";
import { MemoryService } from "./service";
import { SourceService } from "./sources/service";
import { IntelligenceService } from "./intelligence";
import { projectRoutes } from "./routes/projects";
import { orgRoutes } from "./routes/org";
import { ContributorService } from "./contributors";

export type { Completer, Embedder } from "./ports";
export { normalizeCopiedText } from "./lexical";
export { MEMORY_SECTIONS, type MemoryConfig } from "./config";

export interface MemoryServices {
  memory: MemoryService;
  contributors: ContributorService;
  sources: SourceService;
  intelligence: IntelligenceService;
  vectors: MemoryVectors;
}

export interface MemoryDeps {
  /** the async storage (SQLite or PostgreSQL) */
  storage: AsyncStorage;
  embedder: Embedder;
  completer: Completer;
  outbound: OutboundPolicy;
  config: MemoryConfig;
  env: Record<string, string | undefined>;
  /** directory of saved vector indexes (`<database dir>/memory-index`); null/absent = never saved */
  indexDir?: string | null;
  /** wall clock in ms (promotion window, time ranges); default Date.now */
  clock?: () => number;
  /** several replicas: vector index changes reach every replica (absent on a single node) */
  bus?: Bus;
}

/** The services alone, over a storage (tests call them without HTTP). */
export function memoryServices(d: MemoryDeps): MemoryServices {
  const dialect = d.storage.dialect;
  // SQLite counts a word's FTS5 matches without a join (the expression is narrowed by a tenant-derived scope token; only a number comes back)
  const counter = dialect.name === "sqlite" ? d.storage.global("FTS document frequency of a query word within a tenant's scope token (a count only)") : undefined;
  const lexical = new Lexical(dialect, counter, d.config.lexical_max_df);
  const stores = (t: string) => new MemoryStore(d.storage.tenant(t), lexical, dialect);
  const clock = d.clock ?? Date.now;
  const vectors = new MemoryVectors(d.config.max_indexes, d.indexDir ?? null, d.bus);
  const retriever = new Retriever(d.embedder, vectors);
  const memory = new MemoryService(stores, d.embedder, vectors, retriever, d.config, clock);
  const sources = new SourceService({ stores, embedder: d.embedder, vectors, outbound: d.outbound, env: d.env, config: d.config, clock });
  const intelligence = new IntelligenceService(stores, memory, sources, retriever, d.completer, d.outbound, d.config, clock);
  const contributors = new ContributorService(stores, clock);
  return { memory, contributors, sources, intelligence, vectors };
}

/** Saved index files: `<database dir>/memory-index`; none for an in-memory database. */
export const indexDirOf = (databasePath: string): string | null => (databasePath === ":memory:" ? null : join(dirname(databasePath), "memory-index"));

export function create(deps: MemoryDeps & { kernel: Kernel }): Domain<MemoryServices> {
  const s = memoryServices(deps);
  return {
    name: "memory",
    migrations: MEMORY_MIGRATIONS,
    routes: new Elysia({ name: "svc-memory" }).use(projectRoutes(deps.kernel, s.memory)).use(orgRoutes(deps.kernel, s.sources, s.intelligence, s.contributors)),
    service: s,
    close: async () => {
      await s.vectors.saveAll();
      s.vectors.clear();
    },
  };
}
