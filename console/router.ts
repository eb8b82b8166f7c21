import { useEffect, useState } from 'preact/hooks';

// History-API navigation: the server answers every page path with the same index.html.

const EVENT = 'howk:navigate';

export const navigate = (to: string, replace = false): void => {
  if (to === location.pathname + location.search) return;
  if (replace) history.replaceState(null, '', to);
  else history.pushState(null, '', to);
  window.dispatchEvent(new Event(EVENT));
};

/** The current path and query string, re-read on navigation and on back/forward. */
export const useLocation = (): { path: string; query: URLSearchParams } => {
  const read = () => ({ path: location.pathname.replace(/\/+$/, '') || '/', query: new URLSearchParams(location.search) });
  const [loc, setLoc] = useState(read);
  useEffect(() => {
    const on = () => setLoc(read());
    window.addEventListener('popstate', on);
    window.addEventListener(EVENT, on);
    return () => {
      window.removeEventListener('popstate', on);
      window.removeEventListener(EVENT, on);
    };
  }, []);
  return loc;
};
