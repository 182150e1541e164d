/**
 * Prompts domain (doc1 §4.9–§4.11): prompt templates with versions, diffs and runs
 * (/api/v1/prompts), folders (/api/v1/folders, folders/) and multi-model chains
 * (/api/v1/chains, chains/). Models are called through the Completer port (ports.ts).
 * Tables: prompts, prompt_versions, prompt_runs, prompt_folders, prompt_chains — on the async
 * storage (SQLite or PostgreSQL, docs/notes/postgres-plan.md).
 */
import { Elysia } from "elysia";
import type { AsyncStorage } from "../storage/async";
import type { Kernel } from "../core/kernel";
import type { Domain } from "../core/domain";
import type { Completer } from "./ports";
import { PROMPTS_MIGRATIONS } from "./migrations";
import { PromptStore } from "./store";
import { PromptService } from "./service";
import { PromptRunner } from "./execute";
import { promptRoutes } from "./routes";
import { FolderStore } from "./folders/store";
import { FolderService } from "./folders/service";
import { folderRoutes } from "./folders/routes";
import { ChainStore } from "./chains/store";
import { ChainService } from "./chains/service";
import { chainRoutes } from "./chains/routes";

export type { Completer } from "./ports";

export interface PromptServices {
  prompts: PromptService;
  runs: PromptRunner;
  folders: FolderService;
  chains: ChainService;
}

/** The services alone, over a storage (tests call them without HTTP). */
export function promptServices(storage: AsyncStorage, completer: Completer): PromptServices {
  const prompts = (t: string) => new PromptStore(storage.tenant(t), storage.dialect);
  const folders = (t: string) => new FolderStore(storage.tenant(t), storage.dialect);
  return {
    prompts: new PromptService(prompts, folders),
    runs: new PromptRunner(prompts, completer),
    folders: new FolderService(folders),
    chains: new ChainService((t) => new ChainStore(storage.tenant(t)), completer),
  };
}

export function create(deps: { storage: AsyncStorage; kernel: Kernel; completer: Completer }): Domain<PromptServices> {
  const s = promptServices(deps.storage, deps.completer);
  return {
    name: "prompts",
    migrations: PROMPTS_MIGRATIONS,
    routes: new Elysia({ name: "svc-prompts" })
      .use(promptRoutes(deps.kernel, s.prompts, s.runs))
      .use(folderRoutes(deps.kernel, s.folders))
      .use(chainRoutes(deps.kernel, s.chains)),
    service: s,
  };
}
