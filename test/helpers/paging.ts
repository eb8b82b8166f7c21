import { webhookId } from '../../core/domain/ids';

/** Follows a listing's cursor to its end and returns every page; a listing past 200 pages is a failure. */
export const pageAll = async <T>(fetch: (cursor?: string) => Promise<{ items: T[]; next: string | null }>) => {
  const pages: T[][] = [];
  let cursor: string | undefined;
  for (let i = 0; i < 200; i++) {
    const p = await fetch(cursor);
    pages.push(p.items);
    if (p.next === null) return pages;
    cursor = p.next;
  }
  throw new Error('listing never ended');
};

/** `n` fresh webhook ids. */
export const webhookIds = (n: number) => Array.from({ length: n }, () => webhookId());
