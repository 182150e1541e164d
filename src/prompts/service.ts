/**
 * Prompt business rules: slugs, automatic variables, immutable versions (create = v1, changed
 * template = N+1, explicit versions, rollback), diffs (diff.ts), status moves, duplicate.
 * Execution and runs are execute.ts. Plain async methods over a PromptStore: tests call them
 * without HTTP. Transaction bodies touch only the database (on PostgreSQL they may run again).
 */
import { badRequest, invalidRequest, notFound } from "../core/errors";
import { uuid, now } from "../core/ids";
import type { Page, Listed } from "../core/pagination";
import type { ForTenant } from "../storage/scoped";
import { StorageConstraintError } from "../storage/errors";
import { refusable } from "./tx";
import type { PromptFilter, PromptStore } from "./store";
import type { FolderStore } from "./folders/store";
import { extractVariables } from "./template";
import { diffVersions, type DiffResult } from "./diff";
import type { Actor, Prompt, PromptStatus, PromptVersion } from "./types";

export interface CreatePromptInput {
  name: string;
  template: string;
  description?: string;
  model?: string;
  temperature?: number;
  maxTokens?: number;
  tags?: string[];
  folderId?: string | null;
  status?: PromptStatus;
}

export interface UpdatePromptInput extends Partial<Omit<CreatePromptInput, "model" | "temperature" | "maxTokens">> {
  /** null clears the prompt's default */
  model?: string | null;
  temperature?: number | null;
  maxTokens?: number | null;
  message?: string;
}

export interface VersionInput {
  template: string;
  model?: string;
  temperature?: number;
  maxTokens?: number;
  message?: string;
}

/**
 * Allowed status moves: DRAFT <-> PUBLISHED, DRAFT|PUBLISHED -> ARCHIVED, ARCHIVED -> DRAFT
 * (restore, then publish again). Setting the current status again is a no-op.
 */
const STATUS_MOVES: Record<PromptStatus, PromptStatus[]> = {
  DRAFT: ["PUBLISHED", "ARCHIVED"],
  PUBLISHED: ["DRAFT", "ARCHIVED"],
  ARCHIVED: ["DRAFT"],
};

export const SLUG_MAX = 96;
/** creates that lost a race for the same slug to a concurrent one, tried again up to this many times in all */
const SLUG_ATTEMPTS = 40;
/** attempts that take the next free slug (contiguous -2, -3, … for concurrent creates of one name) */
const SLUG_IN_TURN = 24;

/** Lower-case ASCII words joined by '-', accents folded; "prompt" when nothing is left. */
export function slugify(name: string): string {
  const s = name
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, SLUG_MAX)
    .replace(/-+$/g, "");
  return s || "prompt";
}

export class PromptService {
  constructor(
    private readonly stores: ForTenant<PromptStore>,
    private readonly folders: ForTenant<FolderStore>,
  ) {}

  private async must(store: PromptStore, id: string): Promise<Prompt> {
    const p = await store.getPrompt(id);
    if (!p) throw notFound(`prompt '${id}'`);
    return p;
  }

  /** call inside the transaction that writes the prompt: a folder deleted meanwhile makes one of them retry (PostgreSQL) or wait (SQLite) */
  private async checkFolder(tenantId: string, folderId: string | null | undefined) {
    if (folderId && !(await this.folders(tenantId).get(folderId))) throw notFound(`folder '${folderId}'`);
  }

  /** The base slug, or base-2, base-3, ... whichever is free first (call inside a transaction). */
  /** the first free slug of the name, or with `skip`, the (skip+1)-th free one */
  private async freeSlug(store: PromptStore, name: string, skip = 0): Promise<string> {
    const base = slugify(name);
    const taken = new Set(await store.slugsLike(base));
    if (!taken.has(base) && skip-- === 0) return base;
    for (let n = 2; ; n++) if (!taken.has(`${base}-${n}`) && skip-- <= 0) return `${base}-${n}`;
  }

  private newVersion(p: Prompt, actor: Actor, message: string | null | undefined, at: string): PromptVersion {
    return {
      id: uuid(),
      promptId: p.id,
      version: p.currentVersion,
      template: p.template,
      variables: p.variables,
      model: p.model,
      temperature: p.temperature,
      maxTokens: p.maxTokens,
      message: message ?? null,
      createdBy: actor.sub,
      createdAt: at,
    };
  }

  /**
   * The slug is chosen before the transaction that writes it: two creates of the same name at
   * once (one replica or several) may both choose the same free slug, and the unique index refuses
   * the second insert — that one runs again and sees the first's slug. Reading the tenant's slugs
   * inside the SERIALIZABLE transaction made concurrent creates of different names conflict on
   * PostgreSQL's index-page predicate locks (32 writers of one tenant: 1.5 % answered 503).
   */
  async create(actor: Actor, input: CreatePromptInput, firstMessage?: string): Promise<Prompt> {
    for (let attempt = 1; ; attempt++) {
      try {
        // writers of one name take the next free slugs in turn (one wins each round); past
        // SLUG_IN_TURN rounds they spread over the next free ones (a random skip, its range doubling)
        const skip = attempt <= SLUG_IN_TURN ? 0 : Math.floor(Math.random() * Math.min(64, 2 ** (attempt - SLUG_IN_TURN)));
        return await this.createOnce(actor, input, firstMessage, skip);
      } catch (e) {
        if (!(e instanceof StorageConstraintError && e.kind === "unique") || attempt >= SLUG_ATTEMPTS) throw e;
      }
    }
  }

  private async createOnce(actor: Actor, input: CreatePromptInput, firstMessage: string | undefined, skip: number): Promise<Prompt> {
    const variables = extractVariables(input.template);
    const store = this.stores(actor.tenantId);
    const slug = await this.freeSlug(store, input.name, skip);
    return refusable(store, async () => {
      await this.checkFolder(actor.tenantId, input.folderId);
      const at = now();
      const p: Prompt = {
        id: uuid(),
        name: input.name,
        slug,
        description: input.description ?? "",
        template: input.template,
        variables,
        model: input.model ?? null,
        temperature: input.temperature ?? null,
        maxTokens: input.maxTokens ?? null,
        tags: dedupe(input.tags ?? []),
        folderId: input.folderId ?? null,
        status: input.status ?? "DRAFT",
        currentVersion: 1,
        createdBy: actor.sub,
        createdAt: at,
        updatedAt: at,
      };
      await store.insertPrompt(p);
      await store.insertVersion(this.newVersion(p, actor, firstMessage ?? "Initial version", at));
      return p;
    });
  }

  get(actor: Actor, id: string): Promise<Prompt> {
    return this.must(this.stores(actor.tenantId), id);
  }

  list(actor: Actor, filter: PromptFilter, page: Page): Promise<Listed<Prompt>> {
    return this.stores(actor.tenantId).listPrompts(filter, page);
  }

  update(actor: Actor, id: string, input: UpdatePromptInput): Promise<Prompt> {
    const variables = input.template !== undefined ? extractVariables(input.template) : undefined;
    const store = this.stores(actor.tenantId);
    return refusable(store, async () => {
      if (input.folderId !== undefined) await this.checkFolder(actor.tenantId, input.folderId);
      const cur = await this.must(store, id);
      if (input.status !== undefined && input.status !== cur.status && !STATUS_MOVES[cur.status].includes(input.status))
        throw invalidRequest(`prompt status cannot move from ${cur.status} to ${input.status} (allowed: ${STATUS_MOVES[cur.status].join(", ")})`);
      const templateChanged = input.template !== undefined && input.template !== cur.template;
      const at = now();
      const next: Prompt = {
        ...cur,
        name: input.name ?? cur.name,
        description: input.description ?? cur.description,
        model: input.model !== undefined ? input.model : cur.model,
        temperature: input.temperature !== undefined ? input.temperature : cur.temperature,
        maxTokens: input.maxTokens !== undefined ? input.maxTokens : cur.maxTokens,
        tags: input.tags ? dedupe(input.tags) : cur.tags,
        folderId: input.folderId !== undefined ? input.folderId : cur.folderId,
        status: input.status ?? cur.status,
        template: templateChanged ? input.template! : cur.template,
        variables: templateChanged ? variables! : cur.variables,
        currentVersion: templateChanged ? cur.currentVersion + 1 : cur.currentVersion,
        updatedAt: at,
      };
      await store.updatePrompt(next);
      if (templateChanged) await store.insertVersion(this.newVersion(next, actor, input.message, at));
      return next;
    });
  }

  async delete(actor: Actor, id: string): Promise<void> {
    if (!(await this.stores(actor.tenantId).deletePrompt(id))) throw notFound(`prompt '${id}'`);
  }

  async duplicate(actor: Actor, id: string, input: { name?: string; folderId?: string | null }): Promise<Prompt> {
    const src = await this.get(actor, id);
    return this.create(
      actor,
      {
        name: input.name ?? `${src.name} (copy)`.slice(0, 256),
        template: src.template,
        description: src.description,
        model: src.model ?? undefined,
        temperature: src.temperature ?? undefined,
        maxTokens: src.maxTokens ?? undefined,
        tags: src.tags,
        folderId: input.folderId !== undefined ? input.folderId : src.folderId,
        status: "DRAFT",
      },
      `Duplicated from ${src.slug} version ${src.currentVersion}`,
    );
  }

  // ---- versions ----

  /** Always records a new version N+1 (even if the template is unchanged) and makes it current. */
  addVersion(actor: Actor, id: string, input: VersionInput): Promise<PromptVersion> {
    const variables = extractVariables(input.template);
    const store = this.stores(actor.tenantId);
    return refusable(store, async () => {
      const cur = await this.must(store, id);
      const at = now();
      const next: Prompt = {
        ...cur,
        template: input.template,
        variables,
        model: input.model ?? cur.model,
        temperature: input.temperature ?? cur.temperature,
        maxTokens: input.maxTokens ?? cur.maxTokens,
        currentVersion: cur.currentVersion + 1,
        updatedAt: at,
      };
      await store.updatePrompt(next);
      const v = this.newVersion(next, actor, input.message, at);
      await store.insertVersion(v);
      return v;
    });
  }

  /** New version N+1 with version V's template, model, temperature and maxTokens. */
  rollback(actor: Actor, id: string, version: number, message?: string): Promise<PromptVersion> {
    const store = this.stores(actor.tenantId);
    return refusable(store, async () => {
      const cur = await this.must(store, id);
      const old = await store.getVersion(id, version);
      if (!old) throw notFound(`version ${version} of prompt '${id}'`);
      const at = now();
      const next: Prompt = {
        ...cur,
        template: old.template,
        variables: old.variables,
        model: old.model,
        temperature: old.temperature,
        maxTokens: old.maxTokens,
        currentVersion: cur.currentVersion + 1,
        updatedAt: at,
      };
      await store.updatePrompt(next);
      const v = this.newVersion(next, actor, message ?? `Rollback to version ${version}`, at);
      await store.insertVersion(v);
      return v;
    });
  }

  async listVersions(actor: Actor, id: string, page: Page): Promise<Listed<PromptVersion>> {
    const store = this.stores(actor.tenantId);
    await this.must(store, id);
    return store.listVersions(id, page);
  }

  async getVersion(actor: Actor, id: string, version: number): Promise<PromptVersion> {
    const store = this.stores(actor.tenantId);
    await this.must(store, id);
    const v = await store.getVersion(id, version);
    if (!v) throw notFound(`version ${version} of prompt '${id}'`);
    return v;
  }

  async diff(actor: Actor, id: string, fromVersion: number, toVersion: number): Promise<DiffResult> {
    return diffVersions(await this.getVersion(actor, id, fromVersion), await this.getVersion(actor, id, toVersion));
  }
}

const dedupe = (xs: string[]) => [...new Set(xs)];
