// The portal's Endpoints page (/console/portal/endpoints): the client's webhook endpoints (GET /api/webhooks,
// server-paged), adding one (a URL and event types from the catalogue: /openapi.json's `webhooks`), the
// secret shown once, rotating it, enabling, disabling and deleting (each destructive step confirmed).
import { html, useState } from '../html.js';
import { api, apiFetch, enc } from '../api.js';
import { useCatalogue } from '../catalogue.js';
import {
  ConfirmDialog,
  DataTable,
  ErrorBox,
  Field,
  fieldErrors,
  Loading,
  Notice,
  SecretOnce,
  useConfirm,
} from '../components.js';

function EventTypes({ selected, onChange, error }) {
  const catalogue = useCatalogue();
  if (catalogue.error) return html`<${ErrorBox} error=${catalogue.error} onRetry=${catalogue.retry} />`;
  if (!catalogue.types) return html`<${Loading} label="Loading the event catalogue…" />`;
  const toggle = (type, on) => onChange(on ? [...selected, type] : selected.filter((t) => t !== type));
  return html`<fieldset aria-describedby=${error ? 'events-error' : undefined}>
    <legend>Event types</legend>
    ${catalogue.types.map(
      (t) =>
        html`<${Field}
          key=${t.type}
          type="checkbox"
          label=${html`<code>${t.type}</code>${t.summary ? ` — ${t.summary}` : ''}`}
          value=${selected.includes(t.type)}
          onInput=${(on) => toggle(t.type, on)}
        />`,
    )}
    ${error ? html`<p class="field-error" id="events-error">${error}</p>` : null}
  </fieldset>`;
}

function AddEndpoint({ onAdded }) {
  const [url, setUrl] = useState('');
  const [description, setDescription] = useState('');
  const [events, setEvents] = useState([]);
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const errors = fieldErrors(error);
  const submit = async (e) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const created = await api('/webhooks', {
        method: 'POST',
        body: { Url: url, Events: events, ...(description && { Description: description }) },
      });
      setUrl('');
      setDescription('');
      setEvents([]);
      onAdded(created);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  const unplaced = error && !errors.Url && !errors.Events && !errors.Description;
  return html`<form class="panel" onSubmit=${submit} aria-labelledby="add-endpoint">
    <h2 id="add-endpoint">Add an endpoint</h2>
    <${Field}
      label="URL"
      type="url"
      value=${url}
      onInput=${setUrl}
      error=${errors.Url}
      required
      placeholder="https://example.com/webhooks"
    />
    <${Field}
      label="Description (optional)"
      value=${description}
      onInput=${setDescription}
      error=${errors.Description}
    />
    <${EventTypes} selected=${events} onChange=${setEvents} error=${errors.Events} />
    ${unplaced ? html`<${ErrorBox} error=${error} />` : null}
    <button type="submit" disabled=${busy}>Add endpoint</button>
  </form>`;
}

export function PortalEndpointsPage() {
  const [reloadKey, setReloadKey] = useState(0);
  const [secret, setSecret] = useState(null); // { label, value }
  const [notice, setNotice] = useState('');
  const [error, setError] = useState(null);
  const { ask, dialogProps } = useConfirm();
  const reload = () => setReloadKey((k) => k + 1);

  const run = async (work, done) => {
    setError(null);
    setNotice('');
    try {
      await work();
      setNotice(done);
      reload();
    } catch (err) {
      setError(err);
    }
  };
  const rotate = (e) =>
    ask({
      title: 'Rotate the signing secret?',
      message: `A new secret signs the deliveries to ${e.Url} from now on; the current one keeps signing too for a while, so receivers can switch.`,
      confirmLabel: 'Rotate secret',
      action: () =>
        run(async () => {
          const rotated = await api(`/webhooks/${enc(e.Id)}/rotate-secret`, { method: 'POST', body: {} });
          setSecret({ label: `The new secret of ${e.Url}`, value: rotated.Secret });
        }, `The secret of ${e.Url} was rotated.`),
    });
  const setEnabled = (e, enabled) =>
    run(
      () => api(`/webhooks/${enc(e.Id)}`, { method: 'PATCH', body: { Enabled: enabled } }),
      `${e.Url} is ${enabled ? 'enabled' : 'disabled'}.`,
    );
  const toggle = (e) =>
    e.Enabled
      ? ask({
          title: 'Disable this endpoint?',
          message: `Nothing is delivered to ${e.Url} while it is disabled.`,
          confirmLabel: 'Disable',
          action: () => setEnabled(e, false),
        })
      : setEnabled(e, true);
  const remove = (e) =>
    ask({
      title: 'Delete this endpoint?',
      message: `${e.Url} and its delivery log are deleted for good.`,
      confirmLabel: 'Delete endpoint',
      action: () => run(() => apiFetch(`/webhooks/${enc(e.Id)}`, { method: 'DELETE' }), `${e.Url} was deleted.`),
    });

  const columns = [
    { label: 'URL', value: (e) => html`<code>${e.Url}</code>${e.Description ? html`<br />${e.Description}` : ''}` },
    { label: 'Event types', value: (e) => e.Events.join(', ') },
    {
      label: 'State',
      value: (e) => (e.Enabled ? 'Enabled' : `Disabled${e.DisabledReason ? ` (${e.DisabledReason})` : ''}`),
    },
    {
      label: 'Actions',
      value: (e) =>
        html`<div class="actions">
          <button type="button" class="secondary" onClick=${() => rotate(e)} aria-label=${`Rotate secret of ${e.Url}`}>
            Rotate secret
          </button>
          <button
            type="button"
            class="secondary"
            onClick=${() => toggle(e)}
            aria-label=${`${e.Enabled ? 'Disable' : 'Enable'} ${e.Url}`}
          >
            ${e.Enabled ? 'Disable' : 'Enable'}
          </button>
          <button type="button" class="danger" onClick=${() => remove(e)} aria-label=${`Delete ${e.Url}`}>
            Delete
          </button>
        </div>`,
    },
  ];
  return html`
    ${secret ? html`<${SecretOnce} label=${secret.label} secret=${secret.value} onDone=${() => setSecret(null)} />` : null}
    <${Notice}>${notice}</${Notice}>
    <${ErrorBox} error=${error} />
    <${DataTable} path="/webhooks" caption="Your webhook endpoints" columns=${columns} reloadKey=${reloadKey} empty="No endpoint yet: add one below." />
    <${AddEndpoint}
      onAdded=${(created) => {
        setSecret({ label: `The secret of ${created.Url}`, value: created.Secret });
        setNotice(`${created.Url} was added.`);
        reload();
      }}
    />
    <${ConfirmDialog} ...${dialogProps} />
  `;
}
