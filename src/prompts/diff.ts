/** What changed between two versions of a prompt: a unified diff of the templates, variable changes, line stats. */
import { structuredPatch, formatPatch, FILE_HEADERS_ONLY } from "diff";
import type { Variable } from "./template";
import type { PromptVersion } from "./types";

export interface DiffResult {
  fromVersion: number;
  toVersion: number;
  templateDiff: string;
  variablesAdded: Variable[];
  variablesRemoved: Variable[];
  variablesChanged: Array<{ name: string; from: Omit<Variable, "name">; to: Omit<Variable, "name"> }>;
  stats: { additions: number; deletions: number; totalChanges: number };
}

export function diffVersions(a: PromptVersion, b: PromptVersion): DiffResult {
    const fromVersion = a.version;
    const toVersion = b.version;
    const patch = structuredPatch(`v${fromVersion}`, `v${toVersion}`, a.template, b.template, undefined, undefined, { context: 3 });
    let additions = 0;
    let deletions = 0;
    for (const h of patch.hunks)
      for (const l of h.lines) {
        if (l.startsWith("+")) additions++;
        else if (l.startsWith("-")) deletions++;
      }
    const before = new Map(a.variables.map((v) => [v.name, v]));
    const after = new Map(b.variables.map((v) => [v.name, v]));
    const variablesChanged: DiffResult["variablesChanged"] = [];
    for (const [name, v] of after) {
      const o = before.get(name);
      if (o && (o.varType !== v.varType || o.defaultValue !== v.defaultValue))
        variablesChanged.push({ name, from: { varType: o.varType, defaultValue: o.defaultValue }, to: { varType: v.varType, defaultValue: v.defaultValue } });
    }
    return {
      fromVersion,
      toVersion,
      templateDiff: patch.hunks.length ? formatPatch(patch, FILE_HEADERS_ONLY) : "",
      variablesAdded: b.variables.filter((v) => !before.has(v.name)),
      variablesRemoved: a.variables.filter((v) => !after.has(v.name)),
      variablesChanged,
      stats: { additions, deletions, totalChanges: additions + deletions },
    };
  }
