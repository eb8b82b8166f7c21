import type { Scope } from '../security/api-keys';
import type { Route } from './route';

// Which scope a request needs, decided from the route table before any route runs (so a
// refused request never reaches the enqueuer). A request that matches no declared route
// needs a key all the same: `read` for GET/HEAD, `admin` for any other method (a 401 tells
// nothing of what exists). Every declared route counts, mounted in this runtime or not.

export type Access =
  | { kind: 'open' }
  | {
      kind: 'key';
      scope: Scope;
      /** The declared route, when one matches. */
      route?: Route;
      /** Its path parameters, percent-decoded. */
      params: Record<string, string>;
    };

const decode = (s: string): string => {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
};

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

type Compiled = { route: Route; method: string; re: RegExp; names: string[] };

const compile = (route: Route): Compiled => {
  const names: string[] = [];
  const source = route.path
    .split('/')
    .map((seg) => {
      if (!seg.startsWith(':')) return escape(seg);
      names.push(seg.slice(1));
      return '([^/]+)';
    })
    .join('/');
  return { route, method: route.method.toUpperCase(), re: new RegExp(`^${source}$`), names };
};

export const accessMatcher = (routes: readonly Route[]) => {
  const compiled = routes.map(compile);
  return (method: string, path: string): Access => {
    const m = method.toUpperCase();
    const asGet = m === 'HEAD' ? 'GET' : m;
    for (const c of compiled) {
      if (c.method !== asGet) continue;
      const hit = c.re.exec(path);
      if (!hit) continue;
      if (c.route.access === 'open') return { kind: 'open' };
      return { kind: 'key', scope: c.route.access, route: c.route, params: Object.fromEntries(c.names.map((n, i) => [n, decode(hit[i + 1]!)])) };
    }
    return { kind: 'key', scope: asGet === 'GET' ? 'read' : 'admin', params: {} };
  };
};
