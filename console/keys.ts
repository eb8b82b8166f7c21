import { useEffect, useRef } from 'preact/hooks';

// Keyboard shortcuts: one listener per page, skipped while typing in a field or when a
// modifier is held, so that a shortcut never steals a keystroke meant for an input.

export type Shortcut = { key: string; label: string; run: () => void };

const active = new Map<string, Shortcut[]>();

/** Every registered group, for the `?` help: global first. */
export const shortcutGroups = (): [string, Shortcut[]][] => [...active.entries()];

const typing = (t: EventTarget | null): boolean => {
  if (!(t instanceof HTMLElement)) return false;
  return t.isContentEditable || t.tagName === 'INPUT' || t.tagName === 'TEXTAREA' || t.tagName === 'SELECT';
};

export const useShortcuts = (group: string, list: Shortcut[]): void => {
  const ref = useRef(list);
  ref.current = list;
  useEffect(() => {
    active.set(group, ref.current);
    const on = (e: KeyboardEvent) => {
      // Nothing behind an open modal (the help) reacts to its keys.
      if (e.ctrlKey || e.metaKey || e.altKey || e.defaultPrevented || typing(e.target) || document.querySelector('dialog[open]')) return;
      const s = ref.current.find((x) => x.key === e.key);
      if (!s) return;
      e.preventDefault();
      s.run();
    };
    window.addEventListener('keydown', on);
    return () => {
      active.delete(group);
      window.removeEventListener('keydown', on);
    };
  }, [group]);
  active.set(group, list);
};

/** How a key is shown in the help. */
export const keyLabel = (k: string): string => (k === ' ' ? 'Space' : k);
