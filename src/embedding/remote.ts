/**
 * OpenAI-compatible embeddings client: POST {origin}/v1/embeddings with
 * { model, input: string[] } and reads data[].embedding (ordered by `index`).
 * `baseUrl` follows the providers' convention (core/base-url.ts): the origin with or without the
 * version segment, "https://api.openai.com" and "https://api.openai.com/v1" mean the same (a
 * trailing "/embeddings" is tolerated). Every failure (network, timeout,
 * non-2xx, malformed body, dimension change) throws EmbeddingError.
 */
import { EmbeddingError, l2normalize, type Embedder } from "./types";
import { normaliseBaseUrl } from "../core/base-url";
import { credentialSafeFetch } from "../core/outbound";

/** The embeddings endpoint a configured base URL means. */
export const embeddingsUrl = (baseUrl: string) => normaliseBaseUrl(baseUrl.trim().replace(/\/+$/, "").replace(/\/embeddings$/, "")) + "/v1/embeddings";

export interface RemoteEmbedderOptions {
  baseUrl: string;
  model: string;
  apiKey?: string;
  /** Per-request timeout in ms (default 10000). */
  timeoutMs?: number;
  /** Expected vector length; learned from the first response when omitted (0 until then). */
  dimensions?: number;
  /** Max texts per HTTP request (default 256); larger calls are split. */
  maxBatch?: number;
  /** Custom fetch (tests). */
  fetch?: typeof fetch;
}

interface EmbeddingsResponse {
  data?: Array<{ embedding?: number[] | string; index?: number }>;
}

export class RemoteEmbedder implements Embedder {
  readonly id: string;
  private dims: number;
  private ready = false;
  private closed = false;
  private readonly url: string;
  private readonly timeoutMs: number;
  private readonly maxBatch: number;
  private readonly doFetch: typeof fetch;

  constructor(private readonly opts: RemoteEmbedderOptions) {
    if (!opts.baseUrl) throw new EmbeddingError("remote embedder needs a baseUrl");
    if (!opts.model) throw new EmbeddingError("remote embedder needs a model");
    this.url = embeddingsUrl(opts.baseUrl);
    this.id = `openai:${opts.model}`;
    this.dims = opts.dimensions ?? 0;
    this.timeoutMs = opts.timeoutMs ?? 10_000;
    this.maxBatch = Math.max(1, opts.maxBatch ?? 256);
    this.doFetch = opts.fetch ?? (credentialSafeFetch as typeof fetch);
  }

  get dimensions(): number {
    return this.dims;
  }

  /** Probes the endpoint with one short text (also learns the dimension). */
  async load(): Promise<void> {
    if (this.ready) return;
    await this.embed(["ping"]);
  }

  isReady(): boolean {
    return this.ready && !this.closed;
  }

  async embed(texts: string[]): Promise<Float32Array[]> {
    if (this.closed) throw new EmbeddingError("embedder closed");
    if (texts.length === 0) return [];
    const out: Float32Array[] = [];
    for (let i = 0; i < texts.length; i += this.maxBatch) {
      out.push(...(await this.request(texts.slice(i, i + this.maxBatch))));
    }
    this.ready = true;
    return out;
  }

  private async request(input: string[]): Promise<Float32Array[]> {
    const headers: Record<string, string> = { "content-type": "application/json", accept: "application/json" };
    if (this.opts.apiKey) headers.authorization = `Bearer ${this.opts.apiKey}`;
    let res: Response;
    try {
      res = await this.doFetch(this.url, {
        method: "POST",
        headers,
        body: JSON.stringify({ model: this.opts.model, input, encoding_format: "float" }),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (err) {
      const name = (err as { name?: string })?.name;
      if (name === "TimeoutError" || name === "AbortError") {
        throw new EmbeddingError(`embedding request timed out after ${this.timeoutMs} ms`, { cause: err });
      }
      throw new EmbeddingError(`embedding request failed: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
    }
    if (!res.ok) {
      let detail = "";
      try {
        detail = (await res.text()).slice(0, 300);
      } catch {
        /* ignore */
      }
      throw new EmbeddingError(`embedding endpoint returned HTTP ${res.status}${detail ? `: ${detail}` : ""}`);
    }
    let body: EmbeddingsResponse;
    try {
      body = (await res.json()) as EmbeddingsResponse;
    } catch (err) {
      throw new EmbeddingError("embedding endpoint returned invalid JSON", { cause: err });
    }
    const data = body?.data;
    if (!Array.isArray(data) || data.length !== input.length) {
      throw new EmbeddingError(`embedding endpoint returned ${Array.isArray(data) ? data.length : "no"} vectors for ${input.length} inputs`);
    }
    const out: Float32Array[] = new Array(input.length);
    data.forEach((d, pos) => {
      const idx = typeof d.index === "number" ? d.index : pos;
      if (idx < 0 || idx >= input.length || out[idx]) throw new EmbeddingError("embedding endpoint returned bad indices");
      const e = d.embedding;
      let v: Float32Array;
      if (typeof e === "string") {
        const buf = Buffer.from(e, "base64");
        v = new Float32Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength));
      } else if (Array.isArray(e) && e.every((x) => typeof x === "number" && Number.isFinite(x))) {
        v = Float32Array.from(e);
      } else {
        throw new EmbeddingError("embedding endpoint returned a malformed vector");
      }
      if (v.length === 0) throw new EmbeddingError("embedding endpoint returned an empty vector");
      if (this.dims === 0) this.dims = v.length;
      else if (v.length !== this.dims) throw new EmbeddingError(`embedding dimension changed: expected ${this.dims}, got ${v.length}`);
      out[idx] = l2normalize(v);
    });
    return out;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.ready = false;
  }
}
