// Small pieces the operator pages share: filters kept in the URL query (back, forward and reload keep
// them) with their form, times shown as the API gives them, and datetime-local values converted to
// RFC 3339 UTC.
import { html, useEffect, useState } from '../html.js';
import { Field } from '../components.js';

export { Time } from '../components.js';

/** The current query as a plain object; re-read on back/forward and on navigations from this page. */
export function useUrlQuery() {
  const read = () => Object.fromEntries(new URLSearchParams(location.search));
  const [query, setQuery] = useState(read);
  useEffect(() => {
    const onPop = () => setQuery(read());
    addEventListener('popstate', onPop);
    return () => removeEventListener('popstate', onPop);
  }, []);
  /** A new history entry with these filters (empty values dropped). */
  const push = (values) => {
    const target = withQuery(location.pathname, values);
    if (target === location.pathname + location.search) return;
    history.pushState(null, '', target);
    dispatchEvent(new PopStateEvent('popstate'));
  };
  return [query, push];
}

/** `path` with the non-empty `values` added as query parameters. */
export function withQuery(path, values) {
  const search = new URLSearchParams(Object.entries(values).filter(([, v]) => v !== undefined && v !== ''));
  const text = search.toString();
  if (!text) return path;
  return `${path}${path.includes('?') ? '&' : '?'}${text}`;
}

/**
 * The filters `names` (the API's query parameter names) as the URL holds them: `filters` (every name,
 * '' when absent), the `active` names, `key` (changes only with the URL's filters: key the form with it
 * so back/forward show what the list shows, and nothing else remounts it) and `apply(values)`.
 */
export function useUrlFilters(names) {
  const [query, push] = useUrlQuery();
  const filters = Object.fromEntries(names.map((name) => [name, query[name] ?? '']));
  return {
    filters,
    active: names.filter((name) => filters[name]),
    key: names.map((name) => filters[name]).join('\n'),
    apply: push,
  };
}

/**
 * The filter form's state, started from the URL's `filters` (times in local time); `submit` hands
 * `onApply` the values trimmed, times back in RFC 3339 UTC.
 */
export function useFilterForm(filters, onApply) {
  const [form, setForm] = useState({
    ...filters,
    since: toLocalInput(filters.since),
    until: toLocalInput(filters.until),
  });
  const set = (name) => (value) => setForm({ ...form, [name]: value });
  const submit = (event) => {
    event.preventDefault();
    const values = Object.fromEntries(Object.keys(filters).map((name) => [name, String(form[name] ?? '').trim()]));
    onApply({ ...values, since: fromLocalInput(form.since), until: fromLocalInput(form.until) });
  };
  return { form, set, submit };
}

/** "Since" and "until" datetime-local fields of a filter form (`labels` and `hints`: [since, until]). */
export function TimeRangeFields({ form, set, labels, hints }) {
  return html`<${Field}
      label=${labels[0]}
      type="datetime-local"
      value=${form.since}
      onInput=${set('since')}
      hint=${hints[0]}
    />
    <${Field} label=${labels[1]} type="datetime-local" value=${form.until} onInput=${set('until')} hint=${hints[1]} />`;
}

/** Apply (submits the form) and Clear (`onClear`). */
export function FilterActions({ onClear }) {
  return html`<div class="actions">
    <button type="submit">Apply filters</button>
    <button type="button" class="secondary" onClick=${onClear}>Clear filters</button>
  </div>`;
}

/** A list's caption: `base`, plus "filtered by …" naming the active filters (by `labels`, else their name). */
export function filterCaption(base, active, labels = {}) {
  if (active.length === 0) return base;
  return `${base}, filtered by ${active.map((name) => labels[name] ?? name).join(', ')}`;
}

const pad = (n) => String(n).padStart(2, '0');

/** RFC 3339 (UTC) → a datetime-local value in the browser's time zone; '' when not a time. */
export function toLocalInput(rfc3339) {
  const date = new Date(rfc3339 ?? '');
  if (!rfc3339 || Number.isNaN(date.getTime())) return '';
  const day = `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}`;
  return `${day}T${pad(date.getHours())}:${pad(date.getMinutes())}`;
}

/** A datetime-local value (the browser's time zone) → RFC 3339 in UTC, as the API wants; '' when empty. */
export function fromLocalInput(value) {
  if (!value) return '';
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? value : date.toISOString();
}
