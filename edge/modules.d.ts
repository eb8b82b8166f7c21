// wrangler bundles `.wasm` imports as compiled modules (its CompiledWasm rule): workerd
// hands the Worker a WebAssembly.Module, never bytes to compile.
declare module '*.wasm' {
  const module: WebAssembly.Module;
  export default module;
}
