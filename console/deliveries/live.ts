import { useEffect, useState } from 'preact/hooks';
import type { Row } from './types';

// GET /webhooks/events read with fetch (EventSource cannot send the Authorization header):
// the body is parsed as server-sent events; a dropped stream is reopened after 3 s.

export type LiveState = 'connecting' | 'live' | 'off';

/** The `data` of each `event: webhook` in a chunk of SSE text; returns the rest (an incomplete event). */
export const parseEvents = (text: string, onData: (data: string) => void): string => {
  const blocks = text.split('\n\n');
  const rest = blocks.pop() ?? '';
  for (const b of blocks) {
    let event = 'message';
    const data: string[] = [];
    for (const line of b.split('\n')) {
      if (line.startsWith('event:')) event = line.slice(6).trim();
      else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
    }
    if (event === 'webhook' && data.length) onData(data.join('\n'));
  }
  return rest;
};

const follow = async (url: string, key: string | null, signal: AbortSignal, onRow: (r: Row) => void, setState: (s: LiveState) => void) => {
  const r = await fetch(url, { signal, headers: { accept: 'text/event-stream', ...(key ? { authorization: `Bearer ${key}` } : {}) } });
  if (!r.ok || !r.body) throw new Error(`HTTP ${r.status}`);
  setState('live');
  const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    buf = parseEvents(buf + value, (d) => onRow(JSON.parse(d) as Row));
  }
};

/** Follows the changes of one config (and state) while mounted; `onRow` gets each new or changed row. */
export const useLiveRows = (configId: string, state: string, key: string | null, onRow: (r: Row) => void): LiveState => {
  const [live, setLive] = useState<LiveState>('off');
  useEffect(() => {
    if (!configId) return;
    const ac = new AbortController();
    const q = new URLSearchParams({ config_id: configId });
    if (state) q.set('state', state);
    void (async () => {
      while (!ac.signal.aborted) {
        setLive('connecting');
        await follow(`/webhooks/events?${q}`, key, ac.signal, onRow, setLive).catch(() => undefined);
        if (ac.signal.aborted) break;
        setLive('off');
        await new Promise((ok) => setTimeout(ok, 3000));
      }
    })();
    return () => ac.abort();
  }, [configId, state, key]);
  return configId ? live : 'off';
};
