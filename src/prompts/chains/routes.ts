/** /api/v1/chains (doc1 §4.11). Any credential of the tenant reads and executes; writes need ManageConfig (docs/security.md). */
import type { Kernel } from "../../core/kernel";
import { DOC1 } from "../../core/errors";
import { pageEnvelope, pageOf } from "../../core/pagination";
import type { ChainService } from "./service";
import * as S from "../schemas";
import { actorOf, deleted, tag } from "../types";

const textOf = (content: string | Array<{ type: string; text?: string }>) =>
  typeof content === "string" ? content : content.map((p) => p.text ?? "").join("");

export const chainRoutes = (kernel: Kernel, chains: ChainService) => {
  return kernel
    .mount({ prefix: "/api/v1/chains", envelope: DOC1 })
    .get("", async ({ principal, query }) => {
      const page = pageOf(query);
      const { items, total } = await chains.list(actorOf(principal), page);
      return pageEnvelope("chains", items, total, page);
    }, { query: S.PageOnlyQuery, detail: { summary: "List chains", description: "Lists the tenant's chains, paged, each with its steps.", ...tag("chains") } })
    .post("", ({ principal, body, set }) => {
      set.status = 201;
      return chains.create(actorOf(principal), body);
    }, { body: S.ChainBody, perm: "ManageConfig", detail: { summary: "Create a chain", description: "Creates a chain of 1 to 20 steps, each a model with an optional system prompt and a transform of its input: passThrough, extractField (a JSON path of the previous output) or template (with `{{input}}`).", ...tag("chains") } })
    .get("/:id", ({ principal, params }) => chains.get(actorOf(principal), params.id), { params: S.IdParams, detail: { summary: "Get a chain", description: "Answers one chain of the tenant with its steps; 404 if there is none with this id.", ...tag("chains") } })
    .put("/:id", ({ principal, params, body }) => chains.replace(actorOf(principal), params.id, body), {
      perm: "ManageConfig",
      params: S.IdParams,
      body: S.ChainBody,
      detail: { summary: "Replace a chain (whole steps array)", description: "Replaces the chain's name, description and its whole steps array; steps are checked as on create.", ...tag("chains") },
    })
    .delete("/:id", async ({ principal, params }) => {
      await chains.delete(actorOf(principal), params.id);
      return deleted(params.id);
    }, { params: S.IdParams, perm: "ManageConfig", detail: { summary: "Delete a chain", description: "Deletes the chain; irreversible.", ...tag("chains") } })
    .post(
      "/:id/execute",
      ({ principal, params, body, request }) =>
        chains.execute(
          actorOf(principal),
          params.id,
          body.messages.map((m) => ({ role: m.role, content: textOf(m.content) })),
          { requestId: kernel.stateOf(request)?.id },
        ),
      { params: S.IdParams, body: S.ChainExecute, detail: { summary: "Run the steps in order through the gateway", description: "Sends `messages` to the first step, then each step's output, shaped by the next step's transform, to the next one, all through the gateway (cache first). Answers every step's output, tokens and cache hit, and the last output; a failed step is named in the error.", ...tag("chains") } },
    );
};
