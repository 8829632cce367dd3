// The audit trail (docs/guides/portal.md): GET /api/admin/audit newest first in server pages, filtered by actor,
// action and time range (docs/security.md, "The audit trail"). The filters live in the URL query under the API's
// own names, times as RFC 3339 UTC, so back/forward and reload keep them and a link shares them.
import { html } from '../html.js';
import { useAuditActions } from '../catalogue.js';
import { DataTable, Field } from '../components.js';
import {
  FilterActions,
  filterCaption,
  TimeRangeFields,
  Time,
  useFilterForm,
  useUrlFilters,
  withQuery,
} from './operator-common.js';

/** The API's filter names, in the URL as in the API call. */
const FILTERS = ['actor', 'action', 'since', 'until'];

function Filters({ query, onApply }) {
  const { form, set, submit } = useFilterForm(query, onApply);
  // The actions the API documents for this filter (/openapi.json): never a second list to keep in step.
  const { actions } = useAuditActions();
  const known = actions ?? (form.action ? [form.action] : []);
  const options = [{ value: '', label: 'Any action' }, ...known.map((a) => ({ value: a, label: a }))];
  return html`<form role="search" aria-label="Audit trail" class="filters" onSubmit=${submit}>
    <${Field}
      label="Actor"
      value=${form.actor}
      onInput=${set('actor')}
      hint="A user's sub, a client_id, the OS user of the CLI, or signet."
      autocomplete="off"
    />
    <${Field} label="Action" type="select" value=${form.action} onInput=${set('action')} options=${options} />
    <${TimeRangeFields}
      form=${form}
      set=${set}
      labels=${['Since', 'Until']}
      hints=${['Your local time; entries at or after it.', 'Your local time; entries before it.']}
    />
    <${FilterActions} onClear=${() => onApply({})} />
  </form>`;
}

function target(entry) {
  return entry.Target ? html`${entry.Target.Type} <code>${entry.Target.Id}</code>` : '—';
}

function details(entry) {
  const pairs = Object.entries(entry.Details);
  if (pairs.length === 0) return '—';
  return html`<ul class="plain">
    ${pairs.map(
      ([key, value]) => html`<li key=${key}>${key}: ${typeof value === 'string' ? value : JSON.stringify(value)}</li>`,
    )}
  </ul>`;
}

const COLUMNS = [
  { label: 'Time (UTC)', value: (e) => html`<${Time} value=${e.OccurredAtUtc} />` },
  { label: 'Actor', value: (e) => html`${e.Actor.Type} <code>${e.Actor.Id}</code>` },
  { label: 'Action', value: (e) => e.Action },
  { label: 'Target', value: target },
  { label: 'Outcome', value: (e) => e.Outcome },
  { label: 'Details', value: details },
  { label: 'Source address', value: (e) => e.SourceAddress ?? '—' },
];

export function AuditPage() {
  const { filters, active, key, apply } = useUrlFilters(FILTERS);
  const path = withQuery('/admin/audit?limit=50', filters);
  // A new key when the URL's filters change (back/forward): the form shows what the list shows.
  return html` <${Filters} key=${key} query=${filters} onApply=${apply} />
    <div class="audit-list">
      <${DataTable}
        path=${path}
        columns=${COLUMNS}
        caption=${filterCaption('Audit entries, newest first', active)}
        empty=${active.length ? 'No audit entry matches these filters.' : 'The audit trail is empty.'}
      />
    </div>`;
}
