/**
 * The dashboard's script and stylesheet, bundled at build time (bundle.ts, a macro) and inlined
 * here as strings: the binary carries them, nothing is fetched from disk or the internet. Keep this
 * module small: it is re-transpiled (and the front end re-bundled) whenever it is loaded fresh.
 */
import { uiBundle } from "./bundle" with { type: "macro" };

export const ASSETS: { js: string; css: string; version: string } = uiBundle();
