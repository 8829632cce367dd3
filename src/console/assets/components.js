// Reusable pieces of every console page. Each is small, labelled and keyboard-reachable; errors show the
// problem's `detail`; destructive actions go through ConfirmDialog.
import { html, useEffect, useId, useRef, useState } from './html.js';
import { apiFetch } from './api.js';

/** The page frame: header (user, sign-out), nav (the pages the role allows), main (the page). */
export function Layout({ session, nav, current, title, children }) {
  return html`
    <a class="skip" href="#main">Skip to content</a>
    <header class="top">
      ${
        session.portal
          ? html`<a class="brand" href="/console/portal">Webhooks of ${session.portal.client_name}</a>`
          : html`<a class="brand" href="/console">Signet console</a>`
      }
      <div class="who">
        ${
          session.portal?.via === 'link'
            ? html`<span
                >Integrator portal of <strong>${session.portal.client_name}</strong>${
                  session.portal.customer_id
                    ? html`, for customer <code>${session.portal.customer_id}</code>`
                    : ' (the whole client)'
                }</span
              >`
            : html`<span>Signed in as <strong>${session.name || session.email}</strong></span>`
        }
        <form method="post" action="/console/logout">
          <input type="hidden" name="csrf" value=${session.csrf_token} />
          <button type="submit" class="secondary">Sign out</button>
        </form>
      </div>
    </header>
    <nav aria-label=${session.portal ? 'Portal' : 'Console'}>
      <ul>
        ${nav.map(
          (item) =>
            html`<li>
              <a href=${item.path} aria-current=${item.path === current ? 'page' : undefined}>${item.title}</a>
            </li>`,
        )}
      </ul>
    </nav>
    <main id="main">
      <h1 tabindex="-1" id="page-title">${title}</h1>
      ${children}
    </main>
  `;
}

export function Loading({ label = 'Loading…' }) {
  return html`<p class="loading" role="status">${label}</p>`;
}

export function Empty({ children = 'Nothing here yet.' }) {
  return html`<p class="empty">${children}</p>`;
}

/** Shows an ApiError's `detail` (or any error's message), with an optional retry. */
export function ErrorBox({ error, onRetry }) {
  if (!error) return null;
  return html`<div class="error" role="alert">
    <p>${error.detail || error.message || String(error)}</p>
    ${
      error.errors?.length
        ? html`<ul>
            ${error.errors.map((e) => html`<li>${e.pointer ? `${e.pointer}: ` : ''}${e.detail}</li>`)}
          </ul>`
        : null
    }
    ${onRetry ? html`<button type="button" onClick=${onRetry}>Try again</button>` : null}
  </div>`;
}

/** A success message, announced to screen readers. */
export function Notice({ children }) {
  if (!children) return null;
  return html`<p class="notice" role="status">${children}</p>`;
}

/** For pages a role does not allow: the API would refuse them too (403). */
export function NotAllowed() {
  return html`<div class="error" role="alert">
    <p>You are not allowed to see this page. It needs the <strong>admin</strong> role.</p>
    <p><a href="/console">Back to the console home</a></p>
  </div>`;
}

/**
 * A label, an input (or `children` in its place) and its error text, tied together with ids.
 * `type` 'checkbox' puts the box before the label; 'textarea' and 'select' (with `options`) work too.
 */
export function Field({ label, type = 'text', value, onInput, error, hint, options, ...rest }) {
  const id = useId();
  const described = [error ? `${id}-error` : '', hint ? `${id}-hint` : ''].filter(Boolean).join(' ') || undefined;
  const common = { id, 'aria-invalid': error ? 'true' : undefined, 'aria-describedby': described, ...rest };
  let control;
  if (type === 'checkbox')
    control = html`<input
      type="checkbox"
      ...${common}
      checked=${Boolean(value)}
      onChange=${(e) => onInput(e.currentTarget.checked)}
    />`;
  else if (type === 'textarea')
    control = html`<textarea ...${common} value=${value} onInput=${(e) => onInput(e.currentTarget.value)}></textarea>`;
  else if (type === 'select')
    control = html`<select ...${common} value=${value} onChange=${(e) => onInput(e.currentTarget.value)}>
      ${options.map((o) => html`<option value=${o.value}>${o.label}</option>`)}
    </select>`;
  else
    control = html`<input type=${type} ...${common} value=${value} onInput=${(e) => onInput(e.currentTarget.value)} />`;
  return html`<div class=${type === 'checkbox' ? 'field check' : 'field'}>
    ${type === 'checkbox' ? control : null}
    <label for=${id}>${label}</label>
    ${type === 'checkbox' ? null : control} ${hint ? html`<p class="hint" id=${`${id}-hint`}>${hint}</p>` : null}
    ${error ? html`<p class="field-error" id=${`${id}-error`}>${error}</p>` : null}
  </div>`;
}

/** The field errors of an ApiError (`errors[].pointer` `/Email`) by member name, for Field's `error`. */
export function fieldErrors(error) {
  const out = {};
  for (const e of error?.errors ?? []) out[(e.pointer || '').split('/')[1] || ''] = e.detail;
  return out;
}

/** A modal confirmation (native <dialog>): Escape or Cancel closes it; focus returns where it was. */
export function ConfirmDialog({ open, title, message, confirmLabel = 'Confirm', onConfirm, onCancel }) {
  const ref = useRef(null);
  // Not a fixed id: a page may hold more than one dialog, and aria-labelledby takes the first match.
  const titleId = useId();
  useEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    if (open && !dialog.open) dialog.showModal();
    if (!open && dialog.open) dialog.close();
  }, [open]);
  return html`<dialog
    ref=${ref}
    class="confirm"
    aria-labelledby=${titleId}
    onCancel=${(e) => {
      e.preventDefault();
      onCancel();
    }}
  >
    <h2 id=${titleId}>${title}</h2>
    <p>${message}</p>
    <div class="actions">
      <button type="button" class="danger" onClick=${onConfirm}>${confirmLabel}</button>
      <button type="button" class="secondary" onClick=${onCancel} autofocus>Cancel</button>
    </div>
  </dialog>`;
}

/**
 * `confirm` state for ConfirmDialog: `ask({ title, message, confirmLabel, action })` opens it; the
 * action runs on Confirm. Spread `dialogProps` into <ConfirmDialog>.
 */
export function useConfirm() {
  const [pending, setPending] = useState(null);
  const dialogProps = {
    open: pending !== null,
    title: pending?.title ?? '',
    message: pending?.message ?? '',
    confirmLabel: pending?.confirmLabel,
    onCancel: () => setPending(null),
    onConfirm: () => {
      const action = pending?.action;
      setPending(null);
      action?.();
    },
  };
  return { ask: setPending, dialogProps };
}

/**
 * Copies `text` with the Clipboard API. That API exists only in a secure context (https, localhost) and
 * may be refused: then `target` (a ref to the element showing the text), if given, is selected and the
 * user is told to copy it with the keyboard.
 */
export function CopyButton({ text, label = 'Copy', target }) {
  const [status, setStatus] = useState('');
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setStatus('copied');
    } catch {
      if (target?.current) window.getSelection()?.selectAllChildren(target.current);
      setStatus('manual');
    }
  };
  const said = { copied: 'Copied to the clipboard', manual: 'Press Ctrl+C to copy' }[status] ?? '';
  return html`<button type="button" class="secondary" onClick=${copy}>${status === 'copied' ? 'Copied' : label}</button>
    <span class=${status === 'manual' ? 'hint' : 'visually-hidden'} role="status">${said}</span>`;
}

/** A secret shown this once: the warning, the value, a copy button, and Done to hide it for good. */
export function SecretOnce({ label, secret, onDone }) {
  const titleId = useId();
  const value = useRef(null);
  return html`<section class="secret" aria-labelledby=${titleId}>
    <h2 id=${titleId}>${label}</h2>
    <p class="warning">
      <strong>Copy it now: it is shown only this once.</strong> Signet keeps only its hash and cannot show it again.
    </p>
    <p><code class="secret-value" ref=${value}>${secret}</code></p>
    <div class="actions">
      <${CopyButton} text=${secret} label="Copy secret" target=${value} />
      ${onDone ? html`<button type="button" onClick=${onDone}>Done</button>` : null}
    </div>
  </section>`;
}

/**
 * A table over a paged list (`{ Items, _links: { next } }`, src/http/representation/pages.ts): the server pages, the
 * table follows the `next` link and remembers the pages before for "Previous". `columns`:
 * [{ label, value: (item) => text or markup }]. Change `reloadKey` to read the first page again.
 */
export function DataTable({ path, columns, caption, rowKey = (item) => item.Id, empty, reloadKey }) {
  const [pages, setPages] = useState([path]);
  const [state, setState] = useState({ loading: true });
  // Only the newest load may set the state: a reload while paging starts two, which may end in any order.
  const latest = useRef(0);
  const source = `${path}\n${reloadKey}`;
  const current = pages.at(-1);
  const load = async () => {
    const ticket = ++latest.current;
    setState({ loading: true });
    try {
      const { data } = await apiFetch(current);
      if (ticket === latest.current)
        setState({ page: current, source, items: data.Items, next: data._links?.next?.href });
    } catch (error) {
      if (ticket === latest.current) setState({ error });
    }
  };
  useEffect(() => setPages([path]), [path, reloadKey]);
  useEffect(() => {
    load();
  }, [current, reloadKey]);
  if (state.error) return html`<${ErrorBox} error=${state.error} onRetry=${load} />`;
  // Until the page asked for has arrived (not the one before it): no stale rows, no stale buttons.
  // …and for the list asked for now: a new path or reload key shows no rows of the list before.
  if (state.loading || state.page !== current || state.source !== source) return html`<${Loading} />`;
  if (state.items.length === 0 && pages.length === 1) return html`<${Empty}>${empty}</${Empty}>`;
  // Focusable: a table wider than the page scrolls, and keyboard users must be able to scroll it (axe
  // scrollable-region-focusable, WCAG 2.1.1). Not named: the table's caption names what it holds.
  return html`<div class="table-wrap" tabindex="0">
    <table>
      ${
        caption
          ? html`<caption>
              ${caption}
            </caption>`
          : null
      }
      <thead>
        <tr>
          ${columns.map((c) => html`<th scope="col">${c.label}</th>`)}
        </tr>
      </thead>
      <tbody>
        ${state.items.map(
          (item) =>
            html`<tr key=${rowKey(item)}>
              ${columns.map((c) => html`<td>${c.value(item)}</td>`)}
            </tr>`,
        )}
      </tbody>
    </table>
    <div class="pager">
      <button
        type="button"
        class="secondary"
        disabled=${pages.length === 1}
        onClick=${() => setPages(pages.slice(0, -1))}
      >
        Previous page
      </button>
      <button type="button" class="secondary" disabled=${!state.next} onClick=${() => setPages([...pages, state.next])}>
        Next page
      </button>
    </div>
  </div>`;
}

/** An RFC 3339 time from the API, shown as given (UTC), machine-readable in `datetime`. */
export function Time({ value, none = '—' }) {
  if (!value) return none;
  return html`<time datetime=${value}>${value.replace('T', ' ').replace(/\.\d+Z$/, 'Z')}</time>`;
}

const none = (value) => value ?? '—';

/** A delivery's attempts: start, status, duration, error kind and detail, response excerpt. */
export function Attempts({ attempts, empty = 'No attempt yet.', wrapClass = 'table-wrap' }) {
  if (attempts.length === 0) return html`<p class="empty">${empty}</p>`;
  return html`<div class=${wrapClass}>
    <table>
      <caption>
        Every attempt, first to last
      </caption>
      <thead>
        <tr>
          <th scope="col">Attempt</th>
          <th scope="col">Started (UTC)</th>
          <th scope="col">Status</th>
          <th scope="col">Duration</th>
          <th scope="col">Error kind</th>
          <th scope="col">Error detail</th>
          <th scope="col">Response excerpt</th>
        </tr>
      </thead>
      <tbody>
        ${attempts.map(
          (a) =>
            html`<tr key=${a.Attempt}>
              <th scope="row">${a.Attempt}</th>
              <td><${Time} value=${a.StartedAtUtc} /></td>
              <td>${a.StatusCode ?? 'no response'}</td>
              <td>${a.DurationMs} ms</td>
              <td>${none(a.ErrorKind)}</td>
              <td>${none(a.ErrorDetail)}</td>
              <td>${a.ResponseExcerpt ? html`<pre class="excerpt">${a.ResponseExcerpt}</pre>` : '—'}</td>
            </tr>`,
        )}
      </tbody>
    </table>
  </div>`;
}
