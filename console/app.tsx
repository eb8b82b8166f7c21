import { useEffect, useState } from 'preact/hooks';
import { serverInfo, storedKey, storeKey, type ServerInfo } from './api';
import { Deliveries } from './deliveries/page';
import { ApiKeys } from './apikeys/page';
import { DeadLetters } from './deadletters/page';
import { Endpoints } from './endpoints/page';
import { Scripts } from './scripts/page';
import { Help } from './help';
import { useShortcuts } from './keys';
import { LabPage } from './lab/page';
import { Login } from './login';
import { navigate, useLocation } from './router';

// The shell: header, navigation, key login and the `?` help. Pages that call the API sit
// behind the login when the server has auth on; the Lab runs in the browser and needs none.

const PAGES = [
  { path: '/console/deliveries', label: 'Deliveries', api: true },
  { path: '/console/deadletters', label: 'Dead letters', api: true },
  { path: '/console/endpoints', label: 'Endpoints', api: true },
  { path: '/console/scripts', label: 'Scripts', api: true },
  { path: '/console/keys', label: 'Keys', api: true },
  { path: '/lab', label: 'Lab', api: false },
] as const;

/** The operator pages, by path (each in its own folder). */
const MORE: Record<string, typeof DeadLetters> = { '/console/deadletters': DeadLetters, '/console/endpoints': Endpoints, '/console/scripts': Scripts, '/console/keys': ApiKeys };

const pageOf = (path: string) => {
  if (path === '/console') return PAGES[0];
  if (path === '/console/lab') return PAGES.find((p) => p.path === '/lab');
  return PAGES.find((p) => p.path === path);
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
  else if (MORE[page.path]) {
    const More = MORE[page.path]!;
    body = <More apiKey={info!.auth ? key : null} query={query} onUnauthorized={() => signOut('The server refused the key: sign in again.')} />;
  } else body = <Deliveries apiKey={info!.auth ? key : null} query={query} onUnauthorized={() => signOut('The server refused the key: sign in again.')} />;

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
