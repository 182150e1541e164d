/** Entities, tool-entity mappings and invalidation rules over the tenant-bound handle. */
import type { AsyncTenantDb } from "../../storage/async";
import type { Dialect } from "../../storage/dialect";
import type { Page, Listed } from "../../core/pagination";
import { containsFilter, flag, listPage, type Filter } from "../sql";
import { type Entity, type Mapping, type Operation, type Rule } from "../types";

interface EntityRow {
  id: string;
  name: string;
  description: string;
  parent_id: string | null;
  created_at: string;
  updated_at: string;
}
const entityOf = (r: EntityRow): Entity => ({ id: r.id, name: r.name, description: r.description, parentId: r.parent_id, createdAt: r.created_at, updatedAt: r.updated_at });

interface MappingRow {
  tool_id: string;
  entity_id: string;
  param_name: string;
  operation: Operation;
  created_at: string;
}
const mappingOf = (r: MappingRow): Mapping => ({ toolId: r.tool_id, entityId: r.entity_id, paramName: r.param_name, operation: r.operation, createdAt: r.created_at });

interface RuleRow {
  id: string;
  write_tool_id: string;
  invalidate_tool_id: string;
  enabled: number;
  created_at: string;
}
const ruleOf = (r: RuleRow): Rule => ({ id: r.id, writeToolId: r.write_tool_id, invalidateToolId: r.invalidate_tool_id, enabled: r.enabled === 1, createdAt: r.created_at });

export interface RuleFilter {
  writeToolId?: string;
  invalidateToolId?: string;
  enabled?: boolean;
}

export class EntityStore {
  constructor(
    readonly db: AsyncTenantDb,
    private readonly d: Dialect,
  ) {}

  // ---- entities ----

  async insert(e: Entity) {
    await this.db.run(
      "INSERT INTO mcp_entities (id, tenant_id, name, description, parent_id, created_at, updated_at) VALUES ($id, $tenant, $name, $description, $parent_id, $created_at, $updated_at)",
      { id: e.id, name: e.name, description: e.description, parent_id: e.parentId, created_at: e.createdAt, updated_at: e.updatedAt },
    );
  }

  async update(e: Entity) {
    await this.db.run("UPDATE mcp_entities SET name = $name, description = $description, parent_id = $parent_id, updated_at = $updated_at WHERE tenant_id = $tenant AND id = $id", {
      id: e.id,
      name: e.name,
      description: e.description,
      parent_id: e.parentId,
      updated_at: e.updatedAt,
    });
  }

  async get(id: string): Promise<Entity | undefined> {
    const r = await this.db.get<EntityRow>("SELECT * FROM mcp_entities WHERE tenant_id = $tenant AND id = $id", { id });
    return r && entityOf(r);
  }

  async byName(name: string): Promise<Entity | undefined> {
    const r = await this.db.get<EntityRow>("SELECT * FROM mcp_entities WHERE tenant_id = $tenant AND name = $name", { name });
    return r && entityOf(r);
  }

  async all(): Promise<Entity[]> {
    return (await this.db.all<EntityRow>("SELECT * FROM mcp_entities WHERE tenant_id = $tenant ORDER BY name")).map(entityOf);
  }

  async list(f: { parentId?: string; name?: string }, p: Page): Promise<Listed<Entity>> {
    const filters: Filter[] = [
      ["parent_id = $parent_id", "parent_id", f.parentId],
      containsFilter(this.d, "name", "name", f.name),
    ];
    return listPage(this.db, "mcp_entities", filters, "name", p, entityOf);
  }

  /** The entity and every descendant (children, their children, …), ids. */
  async withDescendants(id: string): Promise<string[]> {
    return (
      await this.db.all<{ id: string }>(
        `WITH RECURSIVE tree(id) AS (
           SELECT id FROM mcp_entities WHERE tenant_id = $tenant AND id = $id
           UNION SELECT e.id FROM mcp_entities e JOIN tree ON e.parent_id = tree.id WHERE e.tenant_id = $tenant
         ) SELECT id FROM tree`,
        { id },
      )
    ).map((r) => r.id);
  }

  async delete(id: string) {
    await this.db.run("UPDATE mcp_entities SET parent_id = NULL WHERE tenant_id = $tenant AND parent_id = $id", { id });
    await this.db.run("DELETE FROM mcp_entities WHERE tenant_id = $tenant AND id = $id", { id });
  }

  // ---- mappings ----

  async mapping(toolId: string, entityId: string): Promise<Mapping | undefined> {
    const r = await this.db.get<MappingRow>("SELECT * FROM mcp_tool_entities WHERE tenant_id = $tenant AND tool_id = $tool_id AND entity_id = $entity_id", { tool_id: toolId, entity_id: entityId });
    return r && mappingOf(r);
  }

  /**
   * Insert or change a mapping. `cache_seq` is the newest cache entry of the tenant when the mapping
   * appears or its parameter/operation changes: entries up to it were tagged without it (toolcache).
   */
  async upsertMapping(m: Mapping) {
    await this.db.run(
      `INSERT INTO mcp_tool_entities (tenant_id, tool_id, entity_id, param_name, operation, created_at, cache_seq)
       VALUES ($tenant, $tool_id, $entity_id, $param_name, $operation, $created_at, (SELECT COALESCE(MAX(vec_key), 0) FROM mcp_cache_entries WHERE tenant_id = $tenant))
       ON CONFLICT (tenant_id, tool_id, entity_id) DO UPDATE SET param_name = excluded.param_name, operation = excluded.operation,
         cache_seq = CASE WHEN mcp_tool_entities.param_name != excluded.param_name OR mcp_tool_entities.operation != excluded.operation THEN excluded.cache_seq ELSE mcp_tool_entities.cache_seq END`,
      { tool_id: m.toolId, entity_id: m.entityId, param_name: m.paramName, operation: m.operation, created_at: m.createdAt },
    );
  }

  /** The READ mappings of an entity with the newest cache entry each could not have tagged. */
  async readMappingsOfEntity(entityId: string): Promise<Array<{ toolId: string; cacheSeq: number }>> {
    return (await this.db.all<{ tool_id: string; cache_seq: number }>("SELECT tool_id, cache_seq FROM mcp_tool_entities WHERE tenant_id = $tenant AND entity_id = $entity_id AND operation = 'READ'", { entity_id: entityId })).map((r) => ({ toolId: r.tool_id, cacheSeq: r.cache_seq }));
  }

  async deleteMapping(toolId: string, entityId: string): Promise<boolean> {
    return (await this.db.run("DELETE FROM mcp_tool_entities WHERE tenant_id = $tenant AND tool_id = $tool_id AND entity_id = $entity_id", { tool_id: toolId, entity_id: entityId })).changes > 0;
  }

  async mappingsOfTool(toolId: string): Promise<Mapping[]> {
    return (await this.db.all<MappingRow>("SELECT * FROM mcp_tool_entities WHERE tenant_id = $tenant AND tool_id = $tool_id ORDER BY created_at, entity_id", { tool_id: toolId })).map(mappingOf);
  }

  async mappingsOfEntity(entityId: string): Promise<Mapping[]> {
    return (await this.db.all<MappingRow>("SELECT * FROM mcp_tool_entities WHERE tenant_id = $tenant AND entity_id = $entity_id", { entity_id: entityId })).map(mappingOf);
  }

  async allMappings(): Promise<Mapping[]> {
    return (await this.db.all<MappingRow>("SELECT * FROM mcp_tool_entities WHERE tenant_id = $tenant ORDER BY tool_id, created_at, entity_id")).map(mappingOf);
  }

  // ---- rules ----

  async insertRule(r: Rule) {
    await this.db.run(
      "INSERT INTO mcp_rules (id, tenant_id, write_tool_id, invalidate_tool_id, enabled, created_at) VALUES ($id, $tenant, $write_tool_id, $invalidate_tool_id, $enabled, $created_at)",
      { id: r.id, write_tool_id: r.writeToolId, invalidate_tool_id: r.invalidateToolId, enabled: r.enabled ? 1 : 0, created_at: r.createdAt },
    );
  }

  async rule(id: string): Promise<Rule | undefined> {
    const r = await this.db.get<RuleRow>("SELECT * FROM mcp_rules WHERE tenant_id = $tenant AND id = $id", { id });
    return r && ruleOf(r);
  }

  async ruleFor(writeToolId: string, invalidateToolId: string): Promise<Rule | undefined> {
    const r = await this.db.get<RuleRow>("SELECT * FROM mcp_rules WHERE tenant_id = $tenant AND write_tool_id = $w AND invalidate_tool_id = $i", { w: writeToolId, i: invalidateToolId });
    return r && ruleOf(r);
  }

  async setRuleEnabled(id: string, enabled: boolean) {
    await this.db.run("UPDATE mcp_rules SET enabled = $enabled WHERE tenant_id = $tenant AND id = $id", { id, enabled: enabled ? 1 : 0 });
  }

  async deleteRule(id: string): Promise<boolean> {
    return (await this.db.run("DELETE FROM mcp_rules WHERE tenant_id = $tenant AND id = $id", { id })).changes > 0;
  }

  async listRules(f: RuleFilter, p: Page): Promise<Listed<Rule>> {
    const filters: Filter[] = [
      ["write_tool_id = $w", "w", f.writeToolId],
      ["invalidate_tool_id = $i", "i", f.invalidateToolId],
      ["enabled = $enabled", "enabled", flag(f.enabled)],
    ];
    return listPage(this.db, "mcp_rules", filters, "created_at, id", p, ruleOf);
  }

  async allRules(): Promise<Rule[]> {
    return (await this.db.all<RuleRow>("SELECT * FROM mcp_rules WHERE tenant_id = $tenant ORDER BY created_at, id")).map(ruleOf);
  }

  /** Whether any rule (enabled or not) names the tool as its write tool: its invalidation is configured precisely. */
  async hasRulesOf(writeToolId: string): Promise<boolean> {
    return (await this.db.get<{ n: number }>("SELECT COUNT(*) AS n FROM mcp_rules WHERE tenant_id = $tenant AND write_tool_id = $w", { w: writeToolId }))!.n > 0;
  }

  /** Enabled rules fired by a tool's execution. */
  async enabledRulesOf(writeToolId: string): Promise<Rule[]> {
    return (await this.db.all<RuleRow>("SELECT * FROM mcp_rules WHERE tenant_id = $tenant AND write_tool_id = $w AND enabled = 1", { w: writeToolId })).map(ruleOf);
  }
}
