#!/usr/bin/env bun
/**
 * Builds the embedder's native 16-bit kernel (src/embedding/native/dense-i16.c) into
 * build/native/libsvc-dense-i16.so with the machine's C compiler. `npm install` runs it with
 * --optional (package.json postinstall): without a compiler, or off x86-64 Linux, it says so in one
 * line and svc uses its WebAssembly kernel (same vectors, ~3× slower products).
 *
 *   bun scripts/build-native.ts [--optional] [--if-missing]
 *
 * Without --optional a failure exits 1; as root, a missing compiler is installed from Debian's
 * packages first (the tests need the library: a kernel test is never skipped).
 * --if-missing: do nothing when the library is already there.
 */
import { existsSync, mkdirSync, renameSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { nativeLibraryPath } from "../src/embedding/native/library-path";

const ROOT = resolve(import.meta.dir, "..");
/** The kernel's C source (tests rebuild the library when it is newer). */
export const SOURCE = join(ROOT, "src/embedding/native/dense-i16.c");
export const INSTALL_CC = "apt-get update && apt-get install -y gcc libc6-dev";
/** -ffp-contract=off: no fused multiply-add, so the f32 steps round exactly as the WebAssembly kernel's. */
const FLAGS = ["-O3", "-fPIC", "-shared", "-ffp-contract=off", "-fno-fast-math", "-Wall", "-Wextra"];

function compiler(install: boolean): string | null {
  const found = () => Bun.which("cc") ?? Bun.which("gcc") ?? Bun.which("clang");
  let cc = found();
  if (!cc && install && process.getuid?.() === 0) {
    Bun.spawnSync(["/bin/sh", "-c", `${INSTALL_CC} >/dev/null 2>&1`]);
    cc = found();
  }
  return cc;
}

/** Compiles the library; returns its path, or throws with what to do. */
export function buildNative(opts: { install?: boolean } = {}): string {
  if (process.platform !== "linux" || process.arch !== "x64") throw new Error(`the native kernel is built for x86-64 Linux only (this is ${process.platform}-${process.arch})`);
  const cc = compiler(opts.install ?? true);
  if (!cc) throw new Error(`no C compiler (cc, gcc or clang) on PATH: run \`${INSTALL_CC}\` (as root), then \`npm run build:native\``);
  mkdirSync(dirname(nativeLibraryPath), { recursive: true });
  // compiled beside the target and renamed over it: a concurrent build or a running svc never sees half a file
  const tmp = `${nativeLibraryPath}.${process.pid}.tmp`;
  const r = Bun.spawnSync([cc, ...FLAGS, "-o", tmp, SOURCE, "-lm"], { stderr: "pipe", stdout: "pipe" });
  if (r.exitCode !== 0) {
    rmSync(tmp, { force: true });
    throw new Error(`${cc} failed on ${SOURCE}:\n${r.stderr.toString()}`);
  }
  renameSync(tmp, nativeLibraryPath);
  return nativeLibraryPath;
}

if (import.meta.main) {
  const { values } = parseArgs({ args: process.argv.slice(2), options: { optional: { type: "boolean" }, "if-missing": { type: "boolean" } } });
  if (values["if-missing"] && existsSync(nativeLibraryPath)) process.exit(0);
  try {
    const out = buildNative({ install: !values.optional });
    console.log(`svc: built the native embedding kernel (${out.slice(ROOT.length + 1)})`);
  } catch (e) {
    const msg = (e as Error).message;
    if (!values.optional) {
      console.error(`svc: native embedding kernel not built: ${msg}`);
      process.exit(1);
    }
    console.log(`svc: native embedding kernel not built (${msg.split("\n")[0]}); the embedder uses its WebAssembly kernel`);
  }
}
