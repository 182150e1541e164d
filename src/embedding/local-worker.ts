/**
 * Worker thread hosting the local embedding model, so tokenising and
 * inference never block the request thread.
 *
 * Protocol (structured clone):
 *   in:  { type: "load", choice: {engine, kernel} } | { type: "embed", id: number, texts: string[] } | { type: "close" }
 *   out: { type: "ready", backend } | { type: "result", id, flat: Float32Array } |
 *        { type: "error", id?: number, message }
 *   or, as a helper thread of the dense products (use-lite-fast.ts, parallel-dense.ts):
 *   in:  { type: "helper", memory: shared WebAssembly.Memory, ctl: byte offset of the control block }
 *        — the thread then loops in helperLoop until stopped or terminated.
 * engine: "fast" (default: use-lite-fast.ts, no TF.js) or "tfjs" (use-lite.ts).
 */
import { createUseLiteEngine, type EngineChoice, type UseLiteEngine } from "./engine";

declare const self: Worker;

let model: UseLiteEngine | null = null;
let loading: Promise<void> | null = null;
let choice: EngineChoice = { engine: "fast" };

function ensureLoaded(): Promise<void> {
  loading ??= (async () => {
    const m = await createUseLiteEngine(choice);
    await m.load();
    model = m;
  })();
  return loading;
}

self.onmessage = async (ev: MessageEvent) => {
  const msg = ev.data as { type: string; id?: number; texts?: string[]; choice?: EngineChoice };
  try {
    if (msg.type === "load") {
      if (msg.choice && !loading) choice = msg.choice;
      await ensureLoaded();
      self.postMessage({ type: "ready", backend: model!.backend() });
    } else if (msg.type === "embed") {
      await ensureLoaded();
      const flat = await model!.embedFlat(msg.texts ?? []);
      self.postMessage({ type: "result", id: msg.id, flat }, { transfer: [flat.buffer as ArrayBuffer] });
    } else if (msg.type === "helper") {
      const h = msg as unknown as { memory: WebAssembly.Memory; ctl: number };
      const [{ createWasmMatmulI16 }, { helperLoop }] = await Promise.all([import("./simd-matmul"), import("./parallel-dense")]);
      helperLoop(createWasmMatmulI16(h.memory), h.ctl);
    } else if (msg.type === "close") {
      process.exit(0);
    }
  } catch (err) {
    if (msg.type === "load") loading = null;
    self.postMessage({ type: "error", id: msg.id, message: err instanceof Error ? err.message : String(err) });
  }
};
