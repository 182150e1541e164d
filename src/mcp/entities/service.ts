/**
 * Entities, tool-entity mappings and invalidation rules (doc2 §4.3, §4.4).
 *
 *  - entity names are unique in a tenant (they are what /tool-cache/invalidate and the YAML name);
 *    a parent must exist and may not be the entity itself or one of its descendants;
 *  - deleting an entity invalidates its cached results and its descendants' (cascade), removes its
 *    mappings and the rules it explains (a rule whose write tool writes it and whose read tool
 *    reads it, unless they share another entity); children become roots;
 *  - a mapping is one per (tool, entity): POST again replaces paramName/operation;
 *  - rules/generate pairs every tool that WRITE-maps an entity (and is not READ) with every READ or
 *    IDEMPOTENT tool that READ-maps the same entity; existing pairs are skipped.
 */
import type { ForTenant } from "../../storage/scoped";
import { ApiError, conflict, notFound } from "../../core/errors";
import type { Page, Listed } from "../../core/pagination";
import { uuid } from "../../core/ids";
import type { WallClock } from "../ports";
import type { RegistryStore } from "../registry/store";
import type { ToolCache } from "../toolcache/service";
import { iso, retryOnUnique, uniqueOr409, type Entity, type Mapping, type Operation, type Rule } from "../types";
import type { EntityStore, RuleFilter } from "./store";

const bad = (m: string) => new ApiError("validation_error", m);

export interface GeneratedRule {
  writeToolId: string;
  writeToolName: string;
  invalidateToolId: string;
  invalidateToolName: string;
  sharedEntities: string[];
}

export class EntityService {
  constructor(
    private readonly stores: ForTenant<EntityStore>,
    private readonly registry: ForTenant<RegistryStore>,
    private readonly cache: () => ToolCache,
    private readonly clock: WallClock,
  ) {}

  private nowIso() {
    return iso(this.clock.now());
  }

  // ---- entities ----

  async entity(tenantId: string, id: string): Promise<Entity> {
    const e = await this.stores(tenantId).get(id);
    if (!e) throw notFound("entity");
    return e;
  }

  create(tenantId: string, input: { name: string; description?: string; parentId?: string | null }): Promise<Entity> {
    const store = this.stores(tenantId);
    const taken = `an entity named "${input.name}" already exists`;
    return uniqueOr409(() => store.db.tx(async () => {
      if (input.parentId) await this.entity(tenantId, input.parentId);
      if (await store.byName(input.name)) throw conflict(taken);
      const at = this.nowIso();
      const e: Entity = { id: uuid(), name: input.name, description: input.description ?? "", parentId: input.parentId ?? null, createdAt: at, updatedAt: at };
      await store.insert(e);
      return e;
    }), taken);
  }

  async list(tenantId: string, f: { parentId?: string; name?: string }, p: Page): Promise<Listed<Entity>> {
    if (f.parentId) await this.entity(tenantId, f.parentId);
    return this.stores(tenantId).list(f, p);
  }

  update(tenantId: string, id: string, input: { name?: string; description?: string; parentId?: string | null }): Promise<Entity> {
    const store = this.stores(tenantId);
    const taken = `an entity named "${input.name}" already exists`;
    return uniqueOr409(() => store.db.tx(async () => {
      const e = await this.entity(tenantId, id);
      if (input.name !== undefined && input.name !== e.name && (await store.byName(input.name))) throw conflict(taken);
      if (input.parentId) {
        await this.entity(tenantId, input.parentId);
        if (input.parentId === id) throw bad("an entity cannot be its own parent");
        if ((await store.withDescendants(id)).includes(input.parentId)) throw bad("parentId cannot be one of the entity's descendants");
      }
      const next: Entity = {
        ...e,
        name: input.name ?? e.name,
        description: input.description ?? e.description,
        parentId: input.parentId === undefined ? e.parentId : input.parentId,
        updatedAt: this.nowIso(),
      };
      await store.update(next);
      return next;
    }), taken);
  }

  async delete(tenantId: string, id: string): Promise<{ entity: Entity; invalidated: number; rulesRemoved: number; mappingsRemoved: number }> {
    const store = this.stores(tenantId);
    const entity = await this.entity(tenantId, id);
    const { invalidated } = await this.cache().invalidateEntity(tenantId, entity, undefined, true, { reason: "entity_deleted" });
    return store.db.tx(async () => {
      const mappings = await store.mappingsOfEntity(id);
      const writers = mappings.filter((m) => m.operation === "WRITE").map((m) => m.toolId);
      const readers = new Set(mappings.filter((m) => m.operation === "READ").map((m) => m.toolId));
      let rulesRemoved = 0;
      for (const w of writers)
        for (const r of readers) {
          const rule = await store.ruleFor(w, r);
          if (rule && !(await this.shareOther(store, w, r, id))) rulesRemoved += (await store.deleteRule(rule.id)) ? 1 : 0;
        }
      await store.delete(id); // mappings cascade; children lose their parent
      return { entity, invalidated, rulesRemoved, mappingsRemoved: mappings.length };
    });
  }

  /** Whether a write tool and a read tool share an entity other than `except`. */
  private async shareOther(store: EntityStore, writeToolId: string, readToolId: string, except: string): Promise<boolean> {
    const written = new Set((await store.mappingsOfTool(writeToolId)).filter((m) => m.operation === "WRITE" && m.entityId !== except).map((m) => m.entityId));
    return (await store.mappingsOfTool(readToolId)).some((m) => m.operation === "READ" && written.has(m.entityId));
  }

  // ---- mappings ----

  private async tool(tenantId: string, id: string) {
    const t = await this.registry(tenantId).getTool(id);
    if (!t) throw notFound("tool");
    return t;
  }

  /** POST /tool-entities: 404 when the tool or the entity is absent; the parameter must exist when the tool declares its parameters. */
  map(tenantId: string, input: { toolId: string; entityId: string; paramName: string; operation: Operation }): Promise<{ mapping: Mapping; created: boolean }> {
    const store = this.stores(tenantId);
    return store.db.tx(async () => {
      const tool = await this.tool(tenantId, input.toolId);
      await this.entity(tenantId, input.entityId);
      const props = (tool.inputSchema as { properties?: unknown }).properties;
      const top = input.paramName.split(".")[0]!;
      if (props && typeof props === "object" && !Object.hasOwn(props, top)) throw bad(`tool ${tool.name} has no parameter "${top}"`);
      const old = await store.mapping(input.toolId, input.entityId);
      const mapping: Mapping = { ...input, createdAt: old?.createdAt ?? this.nowIso() };
      await store.upsertMapping(mapping);
      return { mapping, created: !old };
    });
  }

  async unmap(tenantId: string, toolId: string, entityId: string) {
    if (!(await this.stores(tenantId).deleteMapping(toolId, entityId))) throw notFound("tool-entity mapping");
  }

  async mappingsOfTool(tenantId: string, toolId: string): Promise<Mapping[]> {
    await this.tool(tenantId, toolId);
    return this.stores(tenantId).mappingsOfTool(toolId);
  }

  // ---- rules ----

  async rule(tenantId: string, id: string): Promise<Rule> {
    const r = await this.stores(tenantId).rule(id);
    if (!r) throw notFound("rule");
    return r;
  }

  listRules(tenantId: string, f: RuleFilter, p: Page): Promise<Listed<Rule>> {
    return this.stores(tenantId).listRules(f, p);
  }

  createRule(tenantId: string, input: { writeToolId: string; invalidateToolId: string; enabled?: boolean }): Promise<Rule> {
    const store = this.stores(tenantId);
    const taken = "a rule for this pair of tools already exists";
    return uniqueOr409(() => store.db.tx(async () => {
      await this.tool(tenantId, input.writeToolId);
      await this.tool(tenantId, input.invalidateToolId);
      if (input.writeToolId === input.invalidateToolId) throw bad("a rule's writeToolId and invalidateToolId must be different tools");
      if (await store.ruleFor(input.writeToolId, input.invalidateToolId)) throw conflict(taken);
      const r: Rule = { id: uuid(), writeToolId: input.writeToolId, invalidateToolId: input.invalidateToolId, enabled: input.enabled ?? true, createdAt: this.nowIso() };
      await store.insertRule(r);
      return r;
    }), taken);
  }

  async setRuleEnabled(tenantId: string, id: string, enabled: boolean): Promise<Rule> {
    const store = this.stores(tenantId);
    await this.rule(tenantId, id);
    await store.setRuleEnabled(id, enabled);
    return this.rule(tenantId, id);
  }

  async deleteRule(tenantId: string, id: string) {
    if (!(await this.stores(tenantId).deleteRule(id))) throw notFound("rule");
  }

  async generate(tenantId: string): Promise<{ rulesGenerated: number; rulesSkipped: number; generatedRules: GeneratedRule[]; message: string }> {
    const store = this.stores(tenantId);
    const tools = new Map((await this.registry(tenantId).allTools()).map((t) => [t.id, t]));
    const entityNames = new Map((await store.all()).map((e) => [e.id, e.name]));
    // concurrent generations (other replicas) insert the same pairs: the loser runs again and skips them
    const once = () => store.db.tx(async () => {
      // pair -> shared entity names
      const pairs = new Map<string, { w: string; r: string; shared: string[] }>();
      const byEntity = new Map<string, Mapping[]>();
      for (const m of await store.allMappings()) byEntity.set(m.entityId, [...(byEntity.get(m.entityId) ?? []), m]);
      for (const [entityId, ms] of byEntity) {
        const writers = ms.filter((m) => m.operation === "WRITE" && tools.has(m.toolId) && tools.get(m.toolId)!.category !== "READ");
        const readers = ms.filter((m) => m.operation === "READ" && ["READ", "IDEMPOTENT"].includes(tools.get(m.toolId)?.category ?? ""));
        for (const w of writers)
          for (const r of readers) {
            if (w.toolId === r.toolId) continue;
            const k = `${w.toolId}|${r.toolId}`;
            const p = pairs.get(k) ?? { w: w.toolId, r: r.toolId, shared: [] };
            p.shared.push(entityNames.get(entityId) ?? entityId);
            pairs.set(k, p);
          }
      }
      const generated: GeneratedRule[] = [];
      let skipped = 0;
      const sorted = [...pairs.values()].sort((a, b) => (tools.get(a.w)!.name + tools.get(a.r)!.name).localeCompare(tools.get(b.w)!.name + tools.get(b.r)!.name));
      for (const p of sorted) {
        if (await store.ruleFor(p.w, p.r)) {
          skipped++;
          continue;
        }
        await store.insertRule({ id: uuid(), writeToolId: p.w, invalidateToolId: p.r, enabled: true, createdAt: this.nowIso() });
        generated.push({ writeToolId: p.w, writeToolName: tools.get(p.w)!.name, invalidateToolId: p.r, invalidateToolName: tools.get(p.r)!.name, sharedEntities: p.shared.sort() });
      }
      return {
        rulesGenerated: generated.length,
        rulesSkipped: skipped,
        generatedRules: generated,
        message: `generated ${generated.length} rule${generated.length === 1 ? "" : "s"}, skipped ${skipped} existing`,
      };
    });
    return retryOnUnique(once);
  }
}
