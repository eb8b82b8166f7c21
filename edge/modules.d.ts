// Modules the bundler supplies (wrangler.toml).

// `.wasm` imports become compiled modules (wrangler's CompiledWasm rule): workerd hands the
// Worker a WebAssembly.Module, never bytes to compile.
declare module '*.wasm' {
  const module: WebAssembly.Module;
  export default module;
}

// The transformers bundled at build time from transformer.script_dirs
// (scripts/edge-transformers.ts, wired by wrangler.toml [build] and [alias]). Checked again
// by edge/incoming/registry.ts when an isolate starts.
declare module 'howk-transformers' {
  const bundle: { transformers: { name: string; code: string; json: string | null; passwd: string | null }[] };
  export default bundle;
}
