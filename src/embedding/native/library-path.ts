/**
 * Where the native 16-bit kernel's library is (dense-i16.c, built by `npm install` through
 * scripts/build-native.ts): build/native/ of the checkout when svc runs from source.
 * `npm run build` replaces this module (scripts/build.ts) so that the single binary embeds the
 * library and loads it from there. A missing file is not an error: the embedder then uses its
 * WebAssembly kernel (native-matmul.ts says why).
 */
import { fileURLToPath } from "node:url";

export const nativeLibraryPath: string = fileURLToPath(new URL("../../../build/native/libsvc-dense-i16.so", import.meta.url));
