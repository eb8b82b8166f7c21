// wasmoon's emscripten glue names two Node modules (`module`, `url`) on its Node path only;
// workerd never takes that path (the loader sends it down its "shell" path), but the bundler
// must resolve them: wrangler.toml [alias] points both here (and bcryptjs's `crypto`, which it
// only reaches when Web Crypto is missing: its default export has no randomBytes). Reaching
// this is a bug.
const unreachable = (): never => {
  throw new Error('wasmoon tried its Node.js path inside workerd');
};
export const createRequire = unreachable;
export const pathToFileURL = unreachable;
export const fileURLToPath = unreachable;
export default { createRequire, pathToFileURL, fileURLToPath };
