import type { Scope } from './api-keys';

// Which routes need which scope, decided on (method, path) alone so that it runs before any
// route and covers routes added later: a GET that is not listed needs `read`, any other
// unlisted method needs `admin`. Unknown paths need a key too (a 401 tells nothing of what
// exists).

export type Access =
  | { kind: 'open' }
  | {
      kind: 'key';
      scope: Scope;
      /** The config the route acts on, when its path names one. */
      configId: string | null;
      /** A webhook whose config decides (GET /webhooks/:id/status with a config-bound key). */
      webhookId?: string;
    };

type Rule = { methods: readonly string[] | '*'; path: RegExp; access: 'open' | Scope };

const READ = ['GET', 'HEAD'] as const;

const RULES: Rule[] = [
  { methods: READ, path: /^\/(health|ready|health\/dependencies|openapi\.json)$/, access: 'open' },
  // /incoming/:script has its own per-script Basic auth (docs/SECURITY.md), not API keys.
  { methods: '*', path: /^\/incoming\//, access: 'open' },
  { methods: ['POST'], path: /^\/webhooks\/[^/]+\/enqueue(\/batch)?$/, access: 'enqueue' },
  { methods: '*', path: /^\/keys(\/|$)/, access: 'admin' },
  { methods: '*', path: /^\/configs\/[^/]+\/secret(\/|$)/, access: 'admin' },
  { methods: READ, path: /^\//, access: 'read' },
  { methods: '*', path: /^\//, access: 'admin' },
];

// Paths whose first parameter is a config id.
const CONFIG_PATHS = [/^\/config\/([^/]+)\/script(?:\/|$)/, /^\/webhooks\/([^/]+)\/enqueue(?:\/batch)?$/, /^\/configs\/([^/]+)(?:\/|$)/, /^\/scripts\/([^/]+)(?:\/|$)/];
const STATUS_PATH = /^\/webhooks\/([^/]+)\/status$/;

const decode = (s: string): string => {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
};

export const routeAccess = (method: string, path: string): Access => {
  const m = method.toUpperCase();
  const rule = RULES.find((r) => (r.methods === '*' || r.methods.includes(m)) && r.path.test(path))!;
  if (rule.access === 'open') return { kind: 'open' };
  const cfg = CONFIG_PATHS.map((re) => re.exec(path)?.[1]).find((x) => x !== undefined);
  const status = STATUS_PATH.exec(path)?.[1];
  return { kind: 'key', scope: rule.access, configId: cfg === undefined ? null : decode(cfg), ...(status ? { webhookId: decode(status) } : {}) };
};
