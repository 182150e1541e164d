/**
 * Intelligence (doc1 §4.12): a question answered from the tenant's memory — milestones, promoted
 * knowledge and (unless excluded) synced documents of the chosen projects, filtered by
 * contributor and time range — retrieved with the hybrid search (search.ts). The answer is written
 * by the configured model through the gateway's own pipeline (Completer port: routing, semantic
 * cache, usage) from exactly the excerpts returned in `sources`; with no model configured it is
 * extractive (the top excerpts) and says so.
 *
 * Actions really call the target service through a configured source of its type:
 * create_jira_ticket → POST {baseUrl}/rest/api/3/issue, post_slack → POST {baseUrl}/api/chat.postMessage.
 */
import { ApiError, badRequest, notFound } from "../core/errors";
import type { OutboundPolicy } from "../core/outbound";
import type { MemoryConfig } from "./config";
import type { Completer } from "./ports";
import type { Hit, Retriever } from "./search";
import type { MemoryService } from "./service";
import type { MemoryStore } from "./store";
import type { SourceService } from "./sources/service";
import { adfOf, baseUrlOf, isUnconfigured } from "./sources/connectors";
import type { ExternalSource, SourceType, TimeRange } from "./types";

const RANGE_DAYS: Record<TimeRange, number | null> = { "1d": 1, "7d": 7, "14d": 14, "30d": 30, "90d": 90, all: null };
const EXCERPT = 600;
export const ACTIONS = ["create_jira_ticket", "post_slack"] as const;

export interface QueryInput {
  question: string;
  projectIds?: string[];
  contributorFilter?: string;
  timeRange?: TimeRange;
  includeExternalSources?: boolean;
  contextLimit?: number;
}

export interface SourceExcerpt {
  /** the milestone's id; for knowledge and documents their own id (see `kind`) */
  milestoneId: string;
  projectId: string;
  branchName: string | null;
  excerpt: string;
  createdAt: string;
  kind: "milestone" | "knowledge" | "document";
  score: number;
  url?: string | null;
  sourceId?: string;
}

const cut = (s: string, n = EXCERPT) => (s.length > n ? s.slice(0, n - 1) + "…" : s);

export class IntelligenceService {
  constructor(
    private readonly stores: (tenantId: string) => MemoryStore,
    private readonly memory: MemoryService,
    private readonly sources: SourceService,
    private readonly retriever: Retriever,
    private readonly completer: Completer,
    private readonly outbound: OutboundPolicy,
    private readonly config: Pick<MemoryConfig, "intelligence_model" | "intelligence_max_tokens" | "sync_timeout_ms">,
    private readonly clock: () => number = Date.now,
  ) {}

  async query(tenantId: string, b: QueryInput, requestId?: string) {
    const s = this.stores(tenantId);
    const projects = await this.memory.resolveProjects(tenantId, b.projectIds);
    const range = b.timeRange ?? "30d";
    const days = RANGE_DAYS[range];
    const since = days === null ? undefined : new Date(this.clock() - days * 86_400_000).toISOString();
    let agentIds: string[] | undefined;
    let contributor: { contributorId: string; displayName: string } | undefined;
    if (b.contributorFilter !== undefined) {
      const c = (await s.contributor(b.contributorFilter)) ?? (await s.contributorByName(b.contributorFilter));
      if (!c) throw notFound(`contributor '${b.contributorFilter}'`);
      contributor = { contributorId: c.contributorId, displayName: c.displayName };
      agentIds = c.agentIds;
    }
    const limit = b.contextLimit ?? 50;
    const vec = await this.retriever.embedQuery(b.question);
    const filter = { since, agentIds };
    // a contributor filter narrows to that contributor's milestones (knowledge and documents have no agent)
    const kinds = (agentIds ? ["milestone"] : ["milestone", "knowledge", ...(b.includeExternalSources === false ? [] : ["document"])]) as Hit["kind"][];
    const ranked: Hit[] = [];
    for (const k of kinds) ranked.push(...(await this.retriever.rank(s, k, b.question, vec, projects, limit, filter)));
    const hits = ranked
      .sort((a, z) => z.score - a.score || (z.similarity ?? -1) - (a.similarity ?? -1))
      .slice(0, limit);
    const sources = await this.excerpts(s, hits);
    const base = { question: b.question, projectsSearched: projects, timeRange: range, ...(contributor ? { contributor } : {}) };
    const model = this.config.intelligence_model;
    if (!sources.length)
      return { answer: "No stored memory matches this question in the projects, time range and contributor searched.", sources, ...base, mode: "none" as const, model: null, cacheHit: false };
    if (!model) {
      const lines = sources.slice(0, 5).map((x, i) => `${i + 1}. [${x.projectId}${x.branchName ? `/${x.branchName}` : ""}, ${x.createdAt.slice(0, 10)}] ${cut(x.excerpt, 300)}`);
      return {
        answer: `No intelligence model is configured (SVC_MEMORY__INTELLIGENCE_MODEL), so this answer is extractive: the most relevant stored excerpts are\n${lines.join("\n")}`,
        sources,
        ...base,
        mode: "extractive" as const,
        model: null,
        cacheHit: false,
      };
    }
    const context = sources.map((x, i) => `[${i + 1}] (${x.kind}, project ${x.projectId}${x.branchName ? `, branch ${x.branchName}` : ""}, ${x.createdAt}) ${x.excerpt}`).join("\n\n");
    const out = await this.completer.complete({
      tenantId,
      model,
      temperature: 0,
      maxTokens: this.config.intelligence_max_tokens,
      requestId,
      messages: [
        {
          role: "system",
          content:
            "You answer questions about software projects from their stored engineering memory. Use only the numbered excerpts given; cite them as [n]. If the excerpts do not answer the question, say so.",
        },
        { role: "user", content: `Question: ${b.question}\n\nExcerpts:\n${context}` },
      ],
    });
    return { answer: out.text, sources, ...base, mode: "llm" as const, model: out.model, cacheHit: out.cacheHit };
  }

  private async excerpts(s: MemoryStore, hits: Hit[]): Promise<SourceExcerpt[]> {
    const ms = await s.milestonesByKeys(hits.filter((h) => h.kind === "milestone").map((h) => h.key));
    const ks = await s.knowledgeByKeys(hits.filter((h) => h.kind === "knowledge").map((h) => h.key));
    const ds = await s.documentsByKeys(hits.filter((h) => h.kind === "document").map((h) => h.key));
    return hits.flatMap((h): SourceExcerpt[] => {
      if (h.kind === "milestone") {
        const m = ms.get(h.key);
        return m
          ? [{ milestoneId: m.milestoneId, projectId: m.projectId, branchName: m.branchName, excerpt: cut(`${m.thisContribution}\n${m.cumulativeProgress}`), createdAt: m.createdAt, kind: "milestone", score: h.score }]
          : [];
      }
      if (h.kind === "knowledge") {
        const k = ks.get(h.key);
        return k ? [{ milestoneId: k.knowledge_id, projectId: k.project_id, branchName: null, excerpt: cut(k.summary), createdAt: k.created_at, kind: "knowledge", score: h.score }] : [];
      }
      const d = ds.get(h.key);
      return d
        ? [{ milestoneId: d.document_id, projectId: d.project_id, branchName: null, excerpt: cut(`${d.title}\n${d.body}`), createdAt: d.updated_at, kind: "document", score: h.score, url: d.url, sourceId: d.source_id }]
        : [];
    });
  }

  // ---------------------------------------------------------------- actions

  async action(tenantId: string, action: string, params: Record<string, unknown>) {
    if (!(ACTIONS as readonly string[]).includes(action)) throw badRequest(`body field 'action': unknown action '${action}' (supported: ${ACTIONS.join(", ")})`);
    const type: SourceType = action === "create_jira_ticket" ? "jira" : "slack";
    const req = (k: string, max = 50_000) => {
      const v = params[k];
      if (typeof v !== "string" || v.length === 0 || v.length > max) throw badRequest(`body field 'params.${k}': required string of 1-${max} characters`);
      return v;
    };
    const opt = (k: string, max = 50_000) => (params[k] === undefined ? undefined : req(k, max));
    // every param is checked before the source, its credential or the target is touched: bad params are a 400 whatever state the source is in
    const jira = action === "create_jira_ticket";
    const summary = jira ? req("summary", 255) : "";
    const description = jira ? (opt("description") ?? "") : "";
    const issueType = jira ? (opt("issueType", 64) ?? "Task") : "";
    const givenKey = jira ? opt("projectKey", 64) : undefined;
    const text = jira ? "" : req("text", 40_000);
    const givenChannel = jira ? undefined : opt("channel", 128);
    // no configured target is not a bad request (doc1 gives {executed, action, result}): answered 200 with executed false and the reason
    const target = await this.targetSource(tenantId, type, opt("sourceId", 128));
    if (typeof target === "string") return { executed: false, action, result: { error: target } };
    const src = target;
    const projectKey = givenKey ?? (typeof src.config.projectKey === "string" ? src.config.projectKey : undefined);
    if (jira && !projectKey) throw badRequest("body field 'params.projectKey': required (the source's config has none)");
    const channel = givenChannel ?? (typeof src.config.channel === "string" ? src.config.channel : undefined);
    if (!jira && !channel) throw badRequest("body field 'params.channel': required (the source's config has none)");
    const base = baseUrlOf(type, src.config);
    try {
      const token = this.sources.tokenOf(src);
      if (jira) {
        const email = typeof src.config.email === "string" ? src.config.email : undefined;
        const auth = email && token ? `Basic ${Buffer.from(`${email}:${token}`).toString("base64")}` : token ? `Bearer ${token}` : undefined;
        const res = await this.send(`${base}/rest/api/3/issue`, {
          method: "POST",
          headers: { accept: "application/json", "content-type": "application/json", ...(auth ? { authorization: auth } : {}) },
          body: JSON.stringify({ fields: { project: { key: projectKey }, summary, issuetype: { name: issueType }, ...(description ? { description: adfOf(description) } : {}) } }),
        });
        if (!res.ok) return { executed: false, action, result: { sourceId: src.sourceId, status: res.status, error: `jira answered ${res.status}: ${cut(res.text, 300)}` } };
        const j = res.json as { id?: string; key?: string; self?: string };
        return { executed: true, action, result: { sourceId: src.sourceId, id: j.id, key: j.key, self: j.self, url: j.key ? `${base}/browse/${j.key}` : undefined } };
      }
      const res = await this.send(`${base}/api/chat.postMessage`, {
        method: "POST",
        headers: { accept: "application/json", "content-type": "application/json; charset=utf-8", ...(token ? { authorization: `Bearer ${token}` } : {}) },
        body: JSON.stringify({ channel, text }),
      });
      const j = res.json as { ok?: boolean; error?: string; channel?: string; ts?: string };
      if (!res.ok || j?.ok !== true)
        return { executed: false, action, result: { sourceId: src.sourceId, status: res.status, error: `slack answered ${res.status}${j?.error ? `: ${j.error}` : res.ok ? "" : `: ${cut(res.text, 300)}`}` } };
      return { executed: true, action, result: { sourceId: src.sourceId, channel: j.channel, ts: j.ts } };
    } catch (e) {
      if (e instanceof ApiError && (e.type === "validation_error" || e.type === "not_found") && e.message.startsWith("body field")) throw e;
      return { executed: false, action, result: { sourceId: src.sourceId, error: e instanceof ApiError ? e.message : String((e as Error)?.message ?? e) } };
    }
  }

  /**
   * The source an action goes to, or why there is none to go to (a named source that is not
   * configured, or no enabled configured source of the type). A named source that does not exist
   * is 404 and one of another type 400: those are the caller's mistakes, not missing configuration.
   */
  private async targetSource(tenantId: string, type: SourceType, sourceId: string | undefined): Promise<ExternalSource | string> {
    if (sourceId !== undefined) {
      const src = await this.sources.get(tenantId, sourceId);
      if (src.sourceType !== type) throw badRequest(`body field 'params.sourceId': source '${sourceId}' is ${src.sourceType}, not ${type}`);
      if (isUnconfigured(src.config)) return `source '${sourceId}' is not configured (PUT /api/v1/memory/sources/${sourceId} with its config)`;
      return src;
    }
    const found = (await this.stores(tenantId).sourcesOfType(type)).find((x) => x.enabled && !isUnconfigured(x.config));
    return found ?? `no enabled ${type} source is configured (POST /api/v1/memory/sources with sourceType '${type}' and its config)`;
  }

  private async send(url: string, init: RequestInit): Promise<{ ok: boolean; status: number; text: string; json: unknown }> {
    let res: Response;
    try {
      res = await this.outbound.fetch(url, { ...init, signal: AbortSignal.timeout(this.config.sync_timeout_ms) });
    } catch (e) {
      if (e instanceof ApiError) throw e;
      throw new ApiError("proxy_error", `${new URL(url).origin} unreachable: ${(e as Error)?.message ?? String(e)}`);
    }
    const text = await res.text().catch(() => "");
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { ok: res.ok, status: res.status, text, json };
  }
}
