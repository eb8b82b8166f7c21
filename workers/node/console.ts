import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

// The operators' console and the Lab (docs/CONSOLE.md): static assets served by howk-api and
// howk-dev on the API's origin. The bundle is built from console/ with esbuild in memory, once
// per process, at the first request for it: no build step before `npm start` or `npm test`,
// nothing written to disk, never stale against the sources the process started with.

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const SOURCES = join(ROOT, 'console');

/** No inline script or style, no eval, nothing from another origin; the API is same-origin. */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const SECURITY_HEADERS: Record<string, string> = {
  'content-security-policy': CONSOLE_CSP,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
  'cache-control': 'no-cache',
};

type Asset = { body: Uint8Array; type: string; etag: string };
type Bundle = Map<string, Asset>;

const TYPES: Record<string, string> = { js: 'text/javascript; charset=utf-8', css: 'text/css; charset=utf-8', html: 'text/html; charset=utf-8' };
const asset = (body: Uint8Array, ext: string): Asset => ({ body, type: TYPES[ext]!, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"` });

type Esbuild = typeof import('esbuild');

/**
 * esbuild, loaded only by a process that serves the console: the project's own when it is
 * installed, else the one tsx (a runtime dependency: it runs every binary) brings along.
 */
const esbuild = async (): Promise<Esbuild> => {
  try {
    return await import('esbuild');
  } catch {
    return createRequire(join(ROOT, 'node_modules', 'tsx', 'package.json'))('esbuild') as Esbuild;
  }
};

/** console/main.tsx (and the CSS it imports) bundled, plus index.html: name → asset. */
export const buildConsole = async (): Promise<Bundle> => {
  const r = await (
    await esbuild()
  ).build({
    entryPoints: { app: join(SOURCES, 'main.tsx') },
    bundle: true,
    write: false,
    outdir: '/assets',
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    minify: true,
    legalComments: 'none',
    jsx: 'automatic',
    jsxImportSource: 'preact',
    define: { 'process.env.NODE_ENV': '"production"' },
    logLevel: 'silent',
  });
  const out: Bundle = new Map();
  for (const f of r.outputFiles) {
    const name = f.path.slice(f.path.lastIndexOf('/') + 1);
    out.set(name, asset(f.contents, name.slice(name.lastIndexOf('.') + 1)));
  }
  out.set('index.html', asset(await readFile(join(SOURCES, 'index.html')), 'html'));
  return out;
};

export type ConsoleOptions = {
  /** Whether the API asks for keys: the console asks for one only then. */
  auth: boolean;
  /** Shown in the console's header: howk-dev or howk-api. */
  server: string;
  /** The retry policy's numbers, for the Inspector's sentences (docs/CONSOLE.md). */
  retry?: { base_delay: number; max_delay: number; jitter: number; max_deferrals: number };
};

type FetchFn = (req: Request, ...rest: any[]) => Response | Promise<Response>;

// The Inspector's pages (/console/webhooks/<id>) too.
const PAGE = /^\/(lab|console(\/[a-z-]*)?|console\/webhooks\/[A-Za-z0-9_-]{1,64})\/?$/;
const ASSET = /^\/console\/assets\/([a-z]+\.(?:js|css))$/;

/**
 * `api` with the console in front: GET/HEAD of /console, /console/<page>, /lab and
 * /console/assets/* are answered here; everything else goes to the API untouched.
 */
export const withConsole = (api: FetchFn, o: ConsoleOptions, load: () => Promise<Bundle> = buildConsole): FetchFn => {
  let bundle: Promise<Bundle> | undefined;
  const get = () => {
    bundle ??= load().catch((e) => {
      bundle = undefined;
      throw e;
    });
    return bundle;
  };
  const env = JSON.stringify({ auth: o.auth, server: o.server, ...(o.retry ? { retry: o.retry } : {}) });
  return async (req, ...rest) => {
    // Every API request passes here: a URL that names neither can be no console path
    // (parsing it would not add those letters), so it skips the URL parse.
    if (!req.url.includes('console') && !req.url.includes('lab')) return api(req, ...rest);
    const path = new URL(req.url).pathname;
    const page = PAGE.test(path);
    const named = ASSET.exec(path)?.[1];
    const isEnv = path === '/console/env.json';
    if (!page && !named && !isEnv && !path.startsWith('/console/')) return api(req, ...rest);
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      return Response.json(
        { error: { code: 'method_not_allowed', message: `${req.method} is not allowed on the console's static files` } },
        { status: 405, headers: { ...SECURITY_HEADERS, allow: 'GET, HEAD' } },
      );
    }
    if (isEnv) return new Response(req.method === 'HEAD' ? null : env, { headers: { ...SECURITY_HEADERS, 'content-type': 'application/json' } });
    const a = (await get()).get(page ? 'index.html' : (named ?? ''));
    if (!a) return Response.json({ error: { code: 'not_found', message: `no console file ${path}` } }, { status: 404, headers: SECURITY_HEADERS });
    const headers = { ...SECURITY_HEADERS, 'content-type': a.type, etag: a.etag };
    if (req.headers.get('if-none-match') === a.etag) return new Response(null, { status: 304, headers });
    return new Response(req.method === 'HEAD' ? null : (a.body as Uint8Array<ArrayBuffer>), { headers });
  };
};
