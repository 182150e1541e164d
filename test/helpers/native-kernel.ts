/**
 * The embedder's native kernel for tests: built (scripts/build-native.ts, as `npm install` does)
 * when its library is missing or older than its C source, so a test of it runs on a fresh checkout
 * and never against a stale library. Without a C compiler the build installs one as root, else it
 * fails naming the command: a native-kernel test is never skipped.
 */
import { existsSync, statSync } from "node:fs";
import { resolve } from "node:path";
import { nativeLibraryPath } from "../../src/embedding/native/library-path";
import { SOURCE } from "../../scripts/build-native";

const ROOT = resolve(import.meta.dir, "../..");

export function ensureNativeKernel(): void {
  if (existsSync(nativeLibraryPath) && statSync(nativeLibraryPath).mtimeMs >= statSync(SOURCE).mtimeMs) return;
  const r = Bun.spawnSync([process.execPath, "scripts/build-native.ts"], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`the native embedding kernel could not be built: ${r.stderr.toString().trim()}`);
}
