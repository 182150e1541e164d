/**
 * Worker thread hosting the local embedding model, so tokenising and
 * inference never block the request thread (and the emscripten runtime's
 * process-level handlers stay out of the main thread).
 *
 * Protocol (structured clone):
 *   in:  { type: "load" } | { type: "embed", id: number, texts: string[] } | { type: "close" }
 *   out: { type: "ready", backend } | { type: "result", id, flat: Float32Array } |
 *        { type: "error", id?: number, message }
 */
import { UseLiteModel } from "./use-lite";

declare const self: Worker;

const model = new UseLiteModel();
let loading: Promise<void> | null = null;

self.onmessage = async (ev: MessageEvent) => {
  const msg = ev.data as { type: string; id?: number; texts?: string[] };
  try {
    if (msg.type === "load") {
      loading ??= model.load();
      await loading;
      self.postMessage({ type: "ready", backend: model.backend() });
    } else if (msg.type === "embed") {
      loading ??= model.load();
      await loading;
      const flat = await model.embedFlat(msg.texts ?? []);
      self.postMessage({ type: "result", id: msg.id, flat }, { transfer: [flat.buffer as ArrayBuffer] });
    } else if (msg.type === "close") {
      process.exit(0);
    }
  } catch (err) {
    if (msg.type === "load") loading = null;
    self.postMessage({ type: "error", id: msg.id, message: err instanceof Error ? err.message : String(err) });
  }
};
