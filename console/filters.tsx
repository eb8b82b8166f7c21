import type { RefObject } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { navigate } from './router';

// The filter form of the lists of one config (deliveries, dead letters): a config id and one
// choice (a state, a reason). Show puts them in the page's URL, which the list reads.

/** What a page's filter form is: its accessible name, its page's path and its fields. */
export type FilterForm = {
  label: string;
  /** The page's own path, with the filters as its query. */
  path: string;
  configFieldId: string;
  choice: { id: string; label: string; param: string; options: readonly string[] };
};

type Props = {
  form: FilterForm;
  /** The config id and the choice the page shows now (from its URL). */
  configId: string;
  choice: string;
  configInput: RefObject<HTMLInputElement | null>;
  refresh: () => void;
};

export const ConfigFilters = ({ form: { label, path, configFieldId, choice: field }, configId, choice, configInput, refresh }: Props) => {
  const [draft, setDraft] = useState({ configId, choice });
  useEffect(() => setDraft({ configId, choice }), [configId, choice]);
  const apply = (e: Event) => {
    e.preventDefault();
    const q = new URLSearchParams();
    if (draft.configId.trim()) q.set('config_id', draft.configId.trim());
    if (draft.choice) q.set(field.param, draft.choice);
    navigate(`${path}${q.size ? `?${q}` : ''}`);
  };
  return (
    <form class="filters" onSubmit={apply} role="search" aria-label={label}>
      <label for={configFieldId}>Config id</label>
      <input
        id={configFieldId}
        ref={configInput}
        required
        value={draft.configId}
        placeholder="tenant123"
        aria-keyshortcuts="/"
        onInput={(e) => setDraft({ ...draft, configId: e.currentTarget.value })}
      />
      <label for={field.id}>{field.label}</label>
      <select id={field.id} value={draft.choice} onChange={(e) => setDraft({ ...draft, choice: e.currentTarget.value })}>
        <option value="">any</option>
        {field.options.map((o) => (
          <option key={o} value={o}>
            {o}
          </option>
        ))}
      </select>
      <button type="submit">Show</button>
      <button type="button" disabled={!configId} onClick={refresh} aria-keyshortcuts="r">
        Refresh
      </button>
    </form>
  );
};
