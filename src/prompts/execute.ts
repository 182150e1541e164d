/**
 * Prompt execution (doc1 §4.9 execute, test, runs): render the chosen version and, unless it is a
 * dry run, send it as one user message through the gateway (the Completer port). Every execution
 * is recorded as a run, failed model calls included.
 */
import { ApiError, badRequest, invalidRequest, notFound } from "../core/errors";
import { uuid, now } from "../core/ids";
import type { Page, Listed } from "../core/pagination";
import { NO_USAGE } from "../core/usage";
import type { ForTenant } from "../storage/scoped";
import type { Completed, Completer } from "./ports";
import type { PromptStore, RunFilter } from "./store";
import { estimateTokens, render } from "./template";
import { runUsage, type Actor, type Prompt, type Run, type RunUsage } from "./types";

export interface ExecuteInput {
  variables?: Record<string, unknown>;
  version?: number;
  model?: string;
  temperature?: number;
  maxTokens?: number;
  dryRun?: boolean;
}

export interface ExecuteResult {
  runId: string;
  renderedPrompt: string;
  estimatedTokens: number;
  response: string;
  usage: RunUsage;
  cacheHit: boolean;
  durationMs: number;
  dryRun: boolean;
  model: string | null;
  version: number;
}

export class PromptRunner {
  constructor(
    private readonly stores: ForTenant<PromptStore>,
    private readonly completer: Completer,
  ) {}

  private async must(store: PromptStore, id: string): Promise<Prompt> {
    const p = await store.getPrompt(id);
    if (!p) throw notFound(`prompt '${id}'`);
    return p;
  }

  /**
   * Render the chosen version and (unless dryRun) send it as one user message through the
   * gateway. The run is recorded whatever happens; a failed model call is recorded FAILED and
   * its ApiError is re-thrown.
   */
  async execute(actor: Actor, id: string, input: ExecuteInput, opts: { requestId?: string } = {}): Promise<ExecuteResult> {
    const store = this.stores(actor.tenantId);
    const prompt = await this.must(store, id);
    const versionNo = input.version ?? prompt.currentVersion;
    const v = await store.getVersion(id, versionNo);
    if (!v) throw notFound(`version ${versionNo} of prompt '${id}'`);
    const variables = input.variables ?? {};
    const renderedPrompt = render(v.template, variables);
    const estimatedTokens = estimateTokens(renderedPrompt);
    const dryRun = input.dryRun === true;
    // Settings: the request's, else those of an explicitly chosen older version, else the prompt's
    // (a PUT may change the prompt's model/temperature/maxTokens without a new version, and the
    // prompt's `model` is the default model for execution — the current version's copy can be stale).
    const pinned = input.version !== undefined && input.version !== prompt.currentVersion ? v : undefined;
    const model = input.model ?? (pinned ? (pinned.model ?? prompt.model) : prompt.model);
    const temperature = input.temperature ?? (pinned ? (pinned.temperature ?? prompt.temperature) : prompt.temperature) ?? undefined;
    const maxTokens = input.maxTokens ?? (pinned ? (pinned.maxTokens ?? prompt.maxTokens) : prompt.maxTokens) ?? undefined;
    const base: Run = {
      runId: uuid(),
      promptId: id,
      version: versionNo,
      status: "DRY_RUN",
      model: model ?? null,
      variables,
      renderedPrompt,
      response: null,
      usage: runUsage(NO_USAGE),
      cacheHit: false,
      dryRun,
      durationMs: 0,
      error: null,
      createdBy: actor.sub,
      createdAt: now(),
    };
    const result = (r: Run): ExecuteResult => ({
      runId: r.runId,
      renderedPrompt,
      estimatedTokens,
      response: r.response ?? "",
      usage: r.usage,
      cacheHit: r.cacheHit,
      durationMs: r.durationMs,
      dryRun,
      model: r.model,
      version: versionNo,
    });
    if (dryRun) {
      await store.insertRun(base);
      return result(base);
    }
    if (prompt.status === "ARCHIVED") throw invalidRequest(`prompt '${id}' is ARCHIVED; move it to DRAFT or PUBLISHED to execute it (dry runs still work)`);
    if (!model) throw badRequest("no model to execute with: set 'model' on the prompt, the version or the request");
    const started = performance.now();
    let out: Completed;
    try {
      out = await this.completer.complete({
        tenantId: actor.tenantId,
        model,
        messages: [{ role: "user", content: renderedPrompt }],
        temperature,
        maxTokens,
        requestId: opts.requestId,
      });
    } catch (e) {
      const err = e instanceof ApiError ? e : new ApiError("internal_error", "model call failed");
      await store.insertRun({ ...base, status: "FAILED", error: `${err.type}: ${err.message}`, durationMs: Math.round(performance.now() - started) });
      throw err;
    }
    // recorded outside the try: a database error here is reported as itself, not as a failed model call
    const run: Run = {
      ...base,
      status: "COMPLETED",
      model: out.model || model,
      response: out.text,
      usage: runUsage(out.usage),
      cacheHit: out.cacheHit,
      durationMs: Math.round(performance.now() - started),
    };
    await store.insertRun(run);
    return result(run);
  }

  async listRuns(actor: Actor, id: string, filter: RunFilter, page: Page): Promise<Listed<Run>> {
    const store = this.stores(actor.tenantId);
    await this.must(store, id);
    return store.listRuns(id, filter, page);
  }

  async getRun(actor: Actor, id: string, runId: string): Promise<Run> {
    const store = this.stores(actor.tenantId);
    await this.must(store, id);
    const r = await store.getRun(id, runId);
    if (!r) throw notFound(`run '${runId}' of prompt '${id}'`);
    return r;
  }
}
