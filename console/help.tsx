import { useEffect, useRef } from 'preact/hooks';
import { keyLabel, shortcutGroups } from './keys';

// The `?` help: a modal <dialog> (focus kept inside, Escape closes it) listing the
// shortcuts of the page that is open.

export const Help = ({ open, onClose }: { open: boolean; onClose: () => void }) => {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const d = ref.current!;
    if (open && !d.open) d.showModal();
    if (!open && d.open) d.close();
  }, [open]);
  return (
    <dialog ref={ref} class="help" aria-labelledby="help-title" onClose={onClose}>
      <h2 id="help-title">Keyboard shortcuts</h2>
      {open &&
        shortcutGroups().map(([group, list]) => (
          <section key={group}>
            <h3>{group}</h3>
            <dl>
              {list.map((s) => (
                <div key={s.key}>
                  <dt>
                    <kbd>{keyLabel(s.key)}</kbd>
                  </dt>
                  <dd>{s.label}</dd>
                </div>
              ))}
            </dl>
          </section>
        ))}
      <p>Shortcuts are ignored while a text field has the focus.</p>
      <button type="button" onClick={onClose}>
        Close
      </button>
    </dialog>
  );
};
