/**
 * The admin dashboard at /ui: a small Preact + uPlot front end (web/), bundled at build time into
 * this module (assets.ts) and served by the binary itself. It has no tables and no service: it
 * reads and changes everything through the public HTTP API with the signed-in user's token.
 */
import type { Domain } from "../core/domain";
import type { Kernel } from "../core/kernel";
import { ASSETS } from "./assets";
import { uiRoutes, type UiAssets } from "./routes";

export interface UiDeps {
  kernel: Kernel;
  /** the bundled front end (default: the one built into this module) */
  assets?: UiAssets;
}

export function create(deps: UiDeps): Domain<{ assets: UiAssets }> {
  const assets = deps.assets ?? ASSETS;
  return { name: "ui", migrations: [], routes: uiRoutes(deps.kernel, assets), service: { assets } };
}
