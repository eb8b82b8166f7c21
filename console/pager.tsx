import { useState } from 'preact/hooks';

// Paging through a cursor-paged list (GET /webhooks, /deadletter, /scripts): the cursors of the
// pages before the current one are kept, the current one's last, so Previous goes back exactly.

export type Cursors = {
  /** The current page's cursor (null: the first page). */
  cursor: string | null;
  /** The current page's number, from 1. */
  page: number;
  /** Back to the first page (a new filter). */
  reset: () => void;
  /** On to the page after the current one, when the list has one. */
  next: (nextCursor: string | null | undefined) => void;
  prev: () => void;
};

export const useCursors = (): Cursors => {
  const [cursors, setCursors] = useState<(string | null)[]>([null]);
  return {
    cursor: cursors[cursors.length - 1] ?? null,
    page: cursors.length,
    reset: () => setCursors([null]),
    next: (nextCursor) => void (nextCursor && setCursors([...cursors, nextCursor])),
    prev: () => void (cursors.length > 1 && setCursors(cursors.slice(0, -1))),
  };
};

type PagerProps = { label: string; cursors: Cursors; hasNext: boolean; next: () => void };

/** Previous and Next under a list (keys p and n). */
export const Pager = ({ label, cursors, hasNext, next }: PagerProps) => (
  <nav class="pager" aria-label={label}>
    <button type="button" disabled={cursors.page < 2} onClick={cursors.prev} aria-keyshortcuts="p">
      Previous page
    </button>
    <button type="button" disabled={!hasNext} onClick={next} aria-keyshortcuts="n">
      Next page
    </button>
  </nav>
);
