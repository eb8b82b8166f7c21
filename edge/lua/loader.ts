import glue from 'wasmoon/dist/glue.wasm';
import type { LuaWasmLoader } from '../../core/lua';
import { SIGNATURES, wrapperBytes } from './wrappers';
import ii from './wrappers/ii.wasm';
import iiii from './wrappers/iiii.wasm';
import iiiii from './wrappers/iiiii.wasm';
import vii from './wrappers/vii.wasm';

// wasmoon inside workerd. Three things stop wasmoon's own loader there (docs/EDGE.md), and
// this loader answers each:
// 1. workerd compiles no WebAssembly from bytes at run time: glue.wasm is bundled as a
//    compiled module, and emscripten's instantiate of "the bytes it read" gets that module.
// 2. wasmoon's emscripten glue is built for a browser, a web worker or Node only (a
//    "shell" is refused) and reads glue.wasm with fetch, XHR or fs. Without nodejs_compat
//    workerd is none of these: for the duration of the load it is dressed as a web worker
//    (`importScripts`, `location`), and the file:// location sends emscripten to XHR, which
//    a stand-in answers with no bytes (the compiled module is what gets instantiated).
// 3. emscripten compiles a tiny wrapper module per callback signature in addFunction;
//    those are prebuilt (wrappers.ts) and WebAssembly.Module answers them from the bundle.
// wasmoon is imported lazily, inside that window, because it reads `location` when its
// module is first evaluated. The load happens once per isolate; the globals are removed
// when it ends.

/** Enough of XMLHttpRequest for emscripten's async read: an empty body, at once. */
class EmptyXhr {
  status = 0;
  response: ArrayBuffer | null = null;
  responseType = '';
  onload: (() => void) | null = null;
  onerror: (() => void) | null = null;
  open(): void {}
  send(): void {
    this.status = 200;
    this.response = new ArrayBuffer(0);
    queueMicrotask(() => this.onload?.());
  }
}

const PREBUILT: Record<(typeof SIGNATURES)[number], WebAssembly.Module> = { ii, iiii, vii, iiiii };
const prebuiltByBytes = new Map(SIGNATURES.map((sig) => [wrapperBytes(sig).join(','), PREBUILT[sig]]));

let wrappersInstalled = false;

/** WebAssembly.Module, but a known wrapper's bytes get its prebuilt module instead of a compile. */
const installPrebuiltWrappers = (): void => {
  if (wrappersInstalled) return;
  wrappersInstalled = true;
  const Native = WebAssembly.Module;
  (WebAssembly as { Module: typeof WebAssembly.Module }).Module = new Proxy(Native, {
    construct(target, args: [BufferSource], newTarget) {
      const src = args[0];
      const bytes = src instanceof Uint8Array ? src : ArrayBuffer.isView(src) ? new Uint8Array(src.buffer) : new Uint8Array(src);
      return prebuiltByBytes.get(bytes.join(',')) ?? Reflect.construct(target, args, newTarget);
    },
  });
};

export const workerdWasmLoader: LuaWasmLoader = async () => {
  installPrebuiltWrappers();
  const g = globalThis as Record<string, unknown>;
  const instantiate = WebAssembly.instantiate;
  const dressing: Record<string, unknown> = {
    importScripts: () => {
      throw new Error('importScripts is not available');
    },
    location: { href: 'file:///wasmoon/index.js' },
    XMLHttpRequest: EmptyXhr,
  };
  const added = Object.keys(dressing).filter((k) => !(k in g));
  for (const k of added) g[k] = dressing[k];
  (WebAssembly as { instantiate: unknown }).instantiate = (src: unknown, imports?: WebAssembly.Imports) =>
    src instanceof WebAssembly.Module ? instantiate(src, imports) : instantiate(glue, imports).then((instance) => ({ module: glue, instance }));
  try {
    const { LuaFactory } = await import('wasmoon');
    // A file:// location makes emscripten read with XHR instead of fetching a URL.
    return await new LuaFactory('file:///wasmoon/glue.wasm').getLuaModule();
  } finally {
    (WebAssembly as { instantiate: unknown }).instantiate = instantiate;
    for (const k of added) delete g[k];
  }
};
