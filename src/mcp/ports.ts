/**
 * What the MCP gateway needs from other domains, declared here by the caller; the composition
 * root hands in the implementations (src/app.ts).
 */
import type { Principal } from "../core/auth";

/**
 * Texts to L2-normalised vectors (the embedding domain's embedder fits): semantic lookup of tool
 * results and tool-cache search by text. A failure throws ApiError `embedding_error` (503).
 */
export interface Embedder {
  /** stable id of the model; vectors of different ids are never compared */
  readonly id: string;
  readonly dimensions: number;
  isReady(): boolean;
  embed(texts: string[]): Promise<Float32Array[]>;
}

/**
 * Resolves a presented credential (JWT or API key) to a principal, with every per-request check
 * the front door runs (the core Authenticator fits). The connection-events WebSocket accepts the
 * JWT in `?token=`, where the standard bearer policy does not look.
 */
export interface CredentialAuthenticator {
  authenticateCredential(credential: string | undefined): Promise<Principal>;
}

/** Wall-clock milliseconds since the epoch (tests drive it; health cache, TTLs, heartbeats, timestamps). */
export interface WallClock {
  now(): number;
}
