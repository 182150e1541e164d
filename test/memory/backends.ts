/**
 * Memory services over either backend (store/service-level tests with `eachBackend`): the built-in
 * embedder of one app (loaded once per test file, texts embedded once for both backends), and the
 * Memory services over a storage migrated with memory's migrations. A file that uses the
 * embedder calls `afterAll(releaseEmbedder)`.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../../src/config";
import { createApp, closeApp, type App } from "../../src/app";
import { Logger } from "../../src/core/log";
import { memoryServices, type MemoryConfig, type MemoryServices } from "../../src/memory";
import { MEMORY_MIGRATIONS } from "../../src/memory/migrations";
import type { Embedder } from "../../src/memory/ports";
import type { AsyncStorage } from "../../src/storage/async";

let app: App | undefined;
let dir: string | undefined;
const vectors = new Map<string, Float32Array>();

/** Close the embedder's app (each test file using sharedEmbedder calls it in its afterAll: files of one run share this module). */
export async function releaseEmbedder() {
  const [a, d] = [app, dir];
  app = dir = undefined;
  vectors.clear();
  if (a) await closeApp(a);
  if (d) rmSync(d, { recursive: true, force: true });
}

/** The gateway's built-in embedder, each text embedded once per file (both backends get the same vectors). */
export function sharedEmbedder(): Embedder {
  if (!app) {
    dir = mkdtempSync(join(tmpdir(), "svc-memory-emb-"));
    app = createApp(loadConfig({ SVC_STORAGE__PATH: join(dir, "svc.db"), SVC_AUTH__JWT_SECRET: "memory-backends-secret-0123456789" }), { logger: new Logger("error") });
  }
  const e = app.embedder;
  return {
    id: e.id,
    dimensions: e.dimensions,
    async embed(texts) {
      const missing = [...new Set(texts.filter((t) => !vectors.has(t)))];
      if (missing.length) (await e.embed(missing)).forEach((v, i) => vectors.set(missing[i]!, v));
      return texts.map((t) => vectors.get(t)!);
    },
  };
}

/** Memory services over `storage` (migrated here), with the shared embedder unless one is given. */
export async function memoryOver(storage: AsyncStorage, opts: { config?: Partial<MemoryConfig>; embedder?: Embedder; clock?: () => number} = {}): Promise<MemoryServices> {
  await storage.migrate([{ domain: "memory", migrations: MEMORY_MIGRATIONS }]);
  const embedder = opts.embedder ?? sharedEmbedder();
  const config = { ...loadConfig({}).memory, ...opts.config };
  return memoryServices({
    storage,
    embedder,
    completer: { complete: () => Promise.reject(new Error("no model in this test")) },
    outbound: app?.outbound ?? createOutbound(),
    config,
    env: {},
    clock: opts.clock,
  });
}

function createOutbound() {
  // only the sources' sync calls out; these tests do not
  return { fetch: () => Promise.reject(new Error("no outbound calls in this test")), check: () => Promise.resolve() } as never;
}
