import { useState } from 'preact/hooks';

// Key login: the key is checked by the first API call of the page it opens; it stays in
// this tab's sessionStorage until the tab closes or "Sign out".

export const Login = ({ onKey, notice }: { onKey: (key: string) => void; notice: string | null }) => {
  const [value, setValue] = useState('');
  return (
    <section class="login" aria-labelledby="login-title">
      <h1 id="login-title">Sign in</h1>
      <p>This server requires an API key. A key with the read scope shows deliveries; it is kept for this browser tab only.</p>
      {notice && <p role="alert">{notice}</p>}
      <form
        onSubmit={(e) => {
          e.preventDefault();
          if (value.trim()) onKey(value.trim());
        }}
      >
        <label for="api-key">API key</label>
        <input id="api-key" type="password" autocomplete="off" spellcheck={false} required value={value} onInput={(e) => setValue(e.currentTarget.value)} />
        <button type="submit">Sign in</button>
      </form>
    </section>
  );
};
