/**
 * Multi-model chains. Steps run in order; each goes through the gateway (same cache, upstream
 * chosen by model routing). Step 0 gets the request's messages; every later step gets the
 * previous step's output, shaped by its transform, as its user message:
 *   passThrough               the text unchanged
 *   extractField  {field}     the previous output parsed as JSON (a ```json fence is tolerated),
 *                             then the value at `field` — `$.a.b[0]`, `a.b[0]` or `a.b.0`;
 *                             strings are used as they are, other values as JSON
 *   template      {template}  the template with every `{{input}}` replaced by the text
 * On step 0 a transform applies to the content of the last user message.
 * A failing step stops the chain with an error naming the step.
 */
import { ApiError, badRequest, notFound } from "../../core/errors";
import { uuid, now } from "../../core/ids";
import type { Page, Listed } from "../../core/pagination";
import type { ForTenant } from "../../storage/scoped";
import type { Completer, CompletionMessage } from "../ports";
import type { ChainStore } from "./store";
import { refusable } from "../tx";
import type { Actor, Chain, ChainStep } from "../types";

export interface ChainInput {
  name: string;
  description?: string;
  steps: ChainStep[];
}

type Message = CompletionMessage;

export interface ChainStepResult {
  index: number;
  model: string;
  output: string;
  promptTokens: number;
  completionTokens: number;
  cacheHit: boolean;
  durationMs: number;
}

export interface ChainResult {
  output: string;
  steps: ChainStepResult[];
  totalPromptTokens: number;
  totalCompletionTokens: number;
}

const INPUT_RE = /\{\{\s*input\s*\}\}/g;

/** Rules the schema cannot express: a transform's parameter is required by that transform. */
function checkSteps(steps: ChainStep[]): ChainStep[] {
  return steps.map((s, i) => {
    const transform = s.transform ?? "passThrough";
    if (transform === "extractField" && !s.field) throw badRequest(`steps[${i}]: transform 'extractField' needs 'field' (a JSON path such as "$.summary")`);
    if (transform === "extractField") parsePath(s.field!, i);
    if (transform === "template" && (!s.template || !new RegExp(INPUT_RE.source).test(s.template)))
      throw badRequest(`steps[${i}]: transform 'template' needs 'template' containing {{input}}`);
    return { ...s, transform };
  });
}

/** `$.a.b[0]`, `a.b[0]`, `a.b.0`, `$["x y"]` -> ["a","b",0] */
export function parsePath(path: string, stepIndex = 0): Array<string | number> {
  const out: Array<string | number> = [];
  let p = path.trim().replace(/^\$/, "");
  const re = /^(?:\.?([A-Za-z_$][\w$-]*)|\.?(\d+)|\[(\d+)\]|\[\s*(?:"((?:[^"\\]|\\.)*)"|'([^']*)')\s*\])/;
  while (p.length) {
    const m = re.exec(p);
    if (!m) throw badRequest(`steps[${stepIndex}]: invalid JSON path '${path}'`);
    if (m[1] !== undefined) out.push(m[1]);
    else if (m[2] !== undefined) out.push(Number(m[2]));
    else if (m[3] !== undefined) out.push(Number(m[3]));
    else if (m[4] !== undefined) out.push(JSON.parse(`"${m[4]}"`));
    else out.push(m[5]!);
    p = p.slice(m[0].length);
  }
  return out;
}

function parseJsonOutput(text: string): unknown {
  const t = text.trim();
  const fenced = /^```(?:json)?\s*\n([\s\S]*?)\n?```$/i.exec(t);
  return JSON.parse(fenced ? fenced[1]! : t);
}

const stepError = (index: number, message: string) => new ApiError("invalid_request_error", `chain step ${index} failed: ${message}`, { step: index });

/** Apply a step's transform to its input text. Throws ApiError naming the step. */
export function applyTransform(step: ChainStep, input: string, index: number): string {
  switch (step.transform ?? "passThrough") {
    case "passThrough":
      return input;
    case "template":
      return step.template!.replace(new RegExp(INPUT_RE.source, "g"), () => input);
    case "extractField": {
      let value: unknown;
      try {
        value = parseJsonOutput(input);
      } catch {
        throw stepError(index, `extractField '${step.field}': the previous output is not JSON`);
      }
      for (const key of parsePath(step.field!, index)) {
        if (value === null || typeof value !== "object" || !(key in (value as object)))
          throw stepError(index, `extractField '${step.field}': the previous output has no value at that path`);
        value = (value as any)[key];
      }
      return typeof value === "string" ? value : JSON.stringify(value);
    }
  }
}

export class ChainService {
  constructor(
    private readonly stores: ForTenant<ChainStore>,
    private readonly completer: Completer,
  ) {}

  private async must(store: ChainStore, id: string): Promise<Chain> {
    const c = await store.get(id);
    if (!c) throw notFound(`chain '${id}'`);
    return c;
  }

  async create(actor: Actor, input: ChainInput): Promise<Chain> {
    const steps = checkSteps(input.steps);
    const at = now();
    const c: Chain = {
      id: uuid(),
      name: input.name,
      description: input.description ?? "",
      steps,
      workspaceId: actor.tenantId,
      createdBy: actor.sub,
      createdAt: at,
      updatedAt: at,
    };
    await this.stores(actor.tenantId).insert(c);
    return c;
  }

  get(actor: Actor, id: string): Promise<Chain> {
    return this.must(this.stores(actor.tenantId), id);
  }

  list(actor: Actor, page: Page): Promise<Listed<Chain>> {
    return this.stores(actor.tenantId).list(page);
  }

  /** Replaces name, description and the whole steps array. */
  replace(actor: Actor, id: string, input: ChainInput): Promise<Chain> {
    const steps = checkSteps(input.steps);
    const store = this.stores(actor.tenantId);
    return refusable(store, async () => {
      const cur = await this.must(store, id);
      const next: Chain = { ...cur, name: input.name, description: input.description ?? "", steps, updatedAt: now() };
      await store.update(next);
      return next;
    });
  }

  async delete(actor: Actor, id: string): Promise<void> {
    if (!(await this.stores(actor.tenantId).delete(id))) throw notFound(`chain '${id}'`);
  }

  async execute(actor: Actor, id: string, messages: Message[], opts: { requestId?: string } = {}): Promise<ChainResult> {
    const chain = await this.get(actor, id);
    const results: ChainStepResult[] = [];
    let previous = "";
    for (const [index, step] of chain.steps.entries()) {
      let convo: Message[];
      if (index === 0) {
        convo = messages.map((m) => ({ ...m }));
        const lastUser = convo.findLastIndex((m) => m.role === "user");
        if (lastUser >= 0 && (step.transform ?? "passThrough") !== "passThrough")
          convo[lastUser] = { role: "user", content: applyTransform(step, convo[lastUser]!.content, index) };
      } else {
        convo = [{ role: "user", content: applyTransform(step, previous, index) }];
      }
      if (step.systemPrompt) convo = [{ role: "system", content: step.systemPrompt }, ...convo];
      let out;
      try {
        out = await this.completer.complete({
          tenantId: actor.tenantId,
          model: step.modelId,
          messages: convo,
          temperature: step.temperature,
          maxTokens: step.maxTokens,
          requestId: opts.requestId,
        });
      } catch (e) {
        const err = e instanceof ApiError ? e : new ApiError("internal_error", "model call failed");
        throw new ApiError(err.type, `chain step ${index} (model '${step.modelId}') failed: ${err.message}`, { ...err.extra, step: index }, err.headers, err.status);
      }
      previous = out.text;
      results.push({
        index,
        model: out.model || step.modelId,
        output: out.text,
        promptTokens: out.usage.inputTokens,
        completionTokens: out.usage.outputTokens,
        cacheHit: out.cacheHit,
        durationMs: Math.round(out.durationMs), // integer milliseconds, like a prompt run's durationMs
      });
    }
    return {
      output: previous,
      steps: results,
      totalPromptTokens: results.reduce((s, r) => s + r.promptTokens, 0),
      totalCompletionTokens: results.reduce((s, r) => s + r.completionTokens, 0),
    };
  }
}
