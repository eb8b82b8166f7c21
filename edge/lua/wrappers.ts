// The tiny modules emscripten compiles at run time for addFunction (one per JS-callback
// signature): an import `e.f` re-exported as `f`, typed by the signature. workerd refuses
// to compile WebAssembly from bytes at run time, so these are built ahead of time
// (scripts/edge-wasm-wrappers.mjs writes them to edge/lua/wrappers/) and bundled as
// modules; this is the same byte layout as emscripten's convertJsFunctionToWasm.

const TYPE: Record<string, number> = { i: 0x7f, p: 0x7f, j: 0x7e, f: 0x7d, d: 0x7c, e: 0x6f };

export const wrapperBytes = (sig: string): Uint8Array => {
  const ret = sig[0]!;
  const params = sig.slice(1);
  const type = [0x01, 0x60, params.length, ...[...params].map((c) => TYPE[c]!), ...(ret === 'v' ? [0x00] : [0x01, TYPE[ret]!])];
  return new Uint8Array([
    0x00,
    0x61,
    0x73,
    0x6d,
    0x01,
    0x00,
    0x00,
    0x00,
    0x01,
    type.length,
    ...type,
    0x02,
    0x07,
    0x01,
    0x01,
    0x65,
    0x01,
    0x66,
    0x00,
    0x00, // import "e" "f" (func type 0)
    0x07,
    0x05,
    0x01,
    0x01,
    0x66,
    0x00,
    0x00, // export "f" (func 0)
  ]);
};

/** The signatures core/lua registers (runtime.ts) plus the others wasmoon was seen to use. */
export const SIGNATURES = ['ii', 'iiii', 'vii', 'iiiii'] as const;
