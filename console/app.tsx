import { useEffect, useState } from 'preact/hooks';
import { serverInfo, storedKey, storeKey, type ServerInfo } from './api';
import { Deliveries } from './deliveries/page';
import { ApiKeys } from './apikeys/page';
import { DeadLetters } from './deadletters/page';
import { Endpoints } from './endpoints/page';
import { Scripts } from './scripts/page';
import { Help } from './help';
import { Inspector } from './inspector/page';
import { Overview } from './overview/page';
import { useShortcuts } from './keys';
import { LabPage } from './lab/page';
import { Login } from './login';
import { navigate, useLocation } from './router';

// The shell: header, navigation, key login and the `?` help. Pages that call the API sit
// behind the login when the server has auth on; the Lab runs in the browser and needs none.

const PAGES = [
  { path: '/console/overview', label: 'Overview', api: true },
  { path: '/console/deliveries', label: 'Deliveries', api: true },
  { path: '/console/deadletters', label: 'Dead letters', api: true },
  { path: '/console/endpoints', label: 'Endpoints', api: true },
  { path: '/console/scripts', label: 'Scripts', api: true },
  { path: '/console/keys', label: 'Keys', api: true },
  { path: '/lab', label: 'Lab', api: false },
] as const;

// The Inspector of one webhook (/console/webhooks/<id>) is opened from a row, not the navigation.
const INSPECTOR = { path: '/console/webhooks', label: 'Inspector', api: true } as const;
const INSPECTED = /^\/console\/webhooks\/([^/]+)$/;

/** The operator pages, by path (each in its own folder). */
const MORE: Record<string, typeof DeadLetters> = { '/console/deadletters': DeadLetters, '/console/endpoints': Endpoints, '/console/scripts': Scripts, '/console/keys': ApiKeys };

const pageOf = (path: string) => {
  if (path === '/console') return PAGES.find((p) => p.path === '/console/overview');
  if (path === '/console/lab') return PAGES.find((p) => p.path === '/lab');
  if (INSPECTED.test(path)) return INSPECTOR;

  return PAGES.find((p) => p.path === path);
};

/** A page that calls the API, once the server is known and a key is there when needed. */
const apiPage = (
  page: { path: string },
  path: string,
  query: URLSearchParams,
  apiKey: string | null,
  retry: NonNullable<ServerInfo['retry']> | null,
  onUnauthorized: () => void,
) => {
  if (page === INSPECTOR) return <Inspector id={decodeURIComponent(INSPECTED.exec(path)![1]!)} apiKey={apiKey} retry={retry} onUnauthorized={onUnauthorized} />;
  if (page.path === '/console/overview') return <Overview apiKey={apiKey} onUnauthorized={onUnauthorized} />;
  const More = MORE[page.path];
  if (More) return <More apiKey={apiKey} query={query} onUnauthorized={onUnauthorized} />;
  return <Deliveries apiKey={apiKey} query={query} onUnauthorized={onUnauthorized} />;
};

export const App = () => {
  const { path, query } = useLocation();
  const [info, setInfo] = useState<ServerInfo | null>(null);
  const [infoError, setInfoError] = useState<string | null>(null);
  const [key, setKey] = useState<string | null>(storedKey);
  const [notice, setNotice] = useState<string | null>(null);
  const [help, setHelp] = useState(false);
  const page = pageOf(path);

  useEffect(() => {
    serverInfo().then(setInfo, (e: Error) => setInfoError(e.message));
  }, []);
  useEffect(() => {
    if (path === '/console' || path === '/console/lab') navigate(page!.path + location.search, true);
    document.title = `${page?.label ?? 'Not found'} · Howk`;
  }, [path]);

  useShortcuts('Everywhere', [
    { key: '?', label: 'Show this help', run: () => setHelp(true) },
    { key: 'o', label: 'Go to the Overview', run: () => navigate('/console/overview') },
    { key: 'd', label: 'Go to Deliveries', run: () => navigate('/console/deliveries') },
    { key: 'l', label: 'Go to the Lab', run: () => navigate('/lab') },
    { key: 'x', label: 'Go to Dead letters', run: () => navigate('/console/deadletters') },
    { key: 'e', label: 'Go to Endpoints', run: () => navigate('/console/endpoints') },
    { key: 'c', label: 'Go to Scripts', run: () => navigate('/console/scripts') },
    { key: 'k', label: 'Go to Keys', run: () => navigate('/console/keys') },
  ]);

  const signIn = (k: string) => {
    storeKey(k);
    setKey(k);
    setNotice(null);
  };
  const signOut = (why?: string) => {
    storeKey(null);
    setKey(null);
    setNotice(why ?? null);
  };

  const needsKey = !!info?.auth && !key && !!page?.api;
  let body;
  if (!page) body = <p role="alert">There is no page at {path}.</p>;
  else if (infoError && page.api) body = <p role="alert">{infoError}</p>;
  else if (!info && page.api) body = <p>Loading…</p>;
  else if (needsKey) body = <Login onKey={signIn} notice={notice} />;
  else if (page.path === '/lab') body = <LabPage />;
  else body = apiPage(page, path, query, info!.auth ? key : null, info!.retry ?? null, () => signOut('The server refused the key: sign in again.'));

  return (
    <div class="shell">
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <span class="brand">Howk</span>
        <nav aria-label="Pages">
          <ul>
            {PAGES.map((p) => (
              <li key={p.path}>
                <a
                  href={p.path}
                  aria-current={page === p ? 'page' : undefined}
                  onClick={(e) => {
                    e.preventDefault();
                    navigate(p.path);
                  }}
                >
                  {p.label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <div class="session">
          {info && <span class="server">{info.server}</span>}
          {info && !info.auth && <span data-testid="auth-off">Authentication is off on this server: no API key needed.</span>}
          {info?.auth && !key && <span>API key required</span>}
          {info?.auth && key && (
            <>
              <span data-testid="signed-in">Signed in with key …{key.slice(-4)}</span>
              <button type="button" onClick={() => signOut()}>
                Sign out
              </button>
            </>
          )}
          <button type="button" aria-keyshortcuts="?" onClick={() => setHelp(true)}>
            Shortcuts (?)
          </button>
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        {body}
      </main>
      <Help open={help} onClose={() => setHelp(false)} />
    </div>
  );
};
