// Clients (docs/guides/portal.md): list, create (the secret shown once), edit (owner included), rotate the secret,
// delete, through /api/admin/clients; and the registration tokens (registration-tokens.js). Destructive actions
// ask first.
import { html, useState } from '../html.js';
import { api, apiFetch, enc } from '../api.js';
import {
  ConfirmDialog,
  DataTable,
  ErrorBox,
  Field,
  fieldErrors,
  Notice,
  SecretOnce,
  useConfirm,
} from '../components.js';
import { RegistrationTokens } from './registration-tokens.js';

const GRANTS = ['authorization_code', 'refresh_token', 'client_credentials'];
const lines = (text) =>
  text
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);

function CreateClient({ onCreated }) {
  const empty = {
    name: '',
    type: 'confidential',
    grants: ['authorization_code', 'refresh_token'],
    redirects: '',
    scope: '',
    firstParty: false,
    owner: '',
  };
  const [form, setForm] = useState(empty);
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const set = (name) => (value) => setForm({ ...form, [name]: value });
  const toggleGrant = (grant) => (on) =>
    setForm({ ...form, grants: on ? [...form.grants, grant] : form.grants.filter((g) => g !== grant) });
  const submit = async (event) => {
    event.preventDefault();
    setError(null);
    setBusy(true); // a double click must not create the client twice
    try {
      const body = {
        client_name: form.name,
        client_type: form.type,
        grant_types: form.grants,
        redirect_uris: lines(form.redirects),
        scope: form.scope.trim() || undefined,
        first_party: form.firstParty,
        owner: form.owner.trim() || undefined,
      };
      const client = await api('/admin/clients', { method: 'POST', body });
      setForm(empty);
      onCreated(client);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  const errors = fieldErrors(error);
  return html`<section aria-labelledby="create-client-title">
    <h2 id="create-client-title">Create a client</h2>
    <form onSubmit=${submit}>
      <${Field} label="Name" value=${form.name} onInput=${set('name')} error=${errors.client_name} required />
      <${Field}
        label="Type"
        type="select"
        value=${form.type}
        onInput=${set('type')}
        error=${errors.client_type}
        options=${[
          { value: 'confidential', label: 'Confidential (has a secret)' },
          { value: 'public', label: 'Public (no secret)' },
        ]}
      />
      <fieldset>
        <legend>Grant types</legend>
        ${GRANTS.map((g) => html`<${Field} key=${g} label=${g} type="checkbox" value=${form.grants.includes(g)} onInput=${toggleGrant(g)} />`)}
        ${errors.grant_types ? html`<p class="field-error">${errors.grant_types}</p>` : null}
      </fieldset>
      <${Field}
        label="Redirect URIs"
        type="textarea"
        hint="One per line."
        value=${form.redirects}
        onInput=${set('redirects')}
        error=${errors.redirect_uris}
      />
      <${Field}
        label="Scopes"
        hint="Space-separated, e.g. orders:read orders:write."
        value=${form.scope}
        onInput=${set('scope')}
        error=${errors.scope}
      />
      <${Field}
        label="Owner"
        type="email"
        hint="The e-mail address of the Signet user who manages this client's webhooks in the portal (optional)."
        value=${form.owner}
        onInput=${set('owner')}
        error=${errors.owner}
      />
      <${Field}
        label="First party (skips the consent page)"
        type="checkbox"
        value=${form.firstParty}
        onInput=${set('firstParty')}
      />
      <${ErrorBox} error=${error} />
      <button type="submit" disabled=${busy}>Create client</button>
    </form>
  </section>`;
}

function EditClient({ client, onChanged, onSecret, onClose }) {
  const [form, setForm] = useState({
    name: client.client_name,
    redirects: client.redirect_uris.join('\n'),
    scope: client.scope,
    owner: client.owner ?? '',
  });
  const [error, setError] = useState(null);
  const [notice, setNotice] = useState('');
  const { ask, dialogProps } = useConfirm();
  const base = `/admin/clients/${enc(client.client_id)}`;
  const save = async (event) => {
    event.preventDefault();
    setError(null);
    setNotice('');
    try {
      // An empty owner removes it (null); the API answers 422 for an address no user has.
      const body = { client_name: form.name, scope: form.scope.trim(), owner: form.owner.trim() || null };
      if (client.grant_types.includes('authorization_code')) body.redirect_uris = lines(form.redirects);
      onChanged(await api(base, { method: 'PATCH', body }));
      setNotice('Changes saved.');
    } catch (err) {
      setError(err);
    }
  };
  const rotate = () =>
    ask({
      title: `Rotate the secret of ${client.client_name}?`,
      message: 'A new secret is made and the current one stops working at once.',
      confirmLabel: 'Rotate secret',
      action: async () => {
        try {
          const rotated = await api(`${base}/rotate-secret`, { method: 'POST' });
          onSecret(rotated.client_secret);
        } catch (err) {
          setError(err);
        }
      },
    });
  const remove = () =>
    ask({
      title: `Delete ${client.client_name}?`,
      message: 'The client and every grant and token issued to it are deleted. This cannot be undone.',
      confirmLabel: 'Delete client',
      action: async () => {
        try {
          await apiFetch(base, { method: 'DELETE' });
          onClose(`Client ${client.client_name} deleted.`);
        } catch (err) {
          setError(err);
        }
      },
    });
  const errors = fieldErrors(error);
  return html`<section class="panel" aria-labelledby="edit-client-title">
    <h2 id="edit-client-title">Edit ${client.client_name}</h2>
    <p>Client ID <code>${client.client_id}</code> · ${client.client_type} · ${client.grant_types.join(', ')}</p>
    <${Notice}>${notice}</${Notice}>
    <${ErrorBox} error=${error} />
    <form onSubmit=${save}>
      <${Field} label="Name" value=${form.name} onInput=${(v) => setForm({ ...form, name: v })} error=${errors.client_name} required />
      ${
        client.grant_types.includes('authorization_code')
          ? html`<${Field}
              label="Redirect URIs"
              type="textarea"
              hint="One per line."
              value=${form.redirects}
              onInput=${(v) => setForm({ ...form, redirects: v })}
              error=${errors.redirect_uris}
            />`
          : null
      }
      <${Field} label="Scopes" value=${form.scope} onInput=${(v) => setForm({ ...form, scope: v })} error=${errors.scope} />
      <${Field}
        label="Owner"
        type="email"
        hint="Empty: no owner."
        value=${form.owner}
        onInput=${(v) => setForm({ ...form, owner: v })}
        error=${errors.owner}
      />
      <button type="submit">Save changes</button>
    </form>
    <div class="actions">
      ${client.client_type === 'confidential' ? html`<button type="button" class="danger" onClick=${rotate}>Rotate secret</button>` : null}
      <button type="button" class="danger" onClick=${remove}>Delete client</button>
      <button type="button" class="secondary" onClick=${() => onClose('')}>Close</button>
    </div>
    <${ConfirmDialog} ...${dialogProps} />
  </section>`;
}

export function ClientsPage() {
  const [reloadKey, setReloadKey] = useState(0);
  const [editing, setEditing] = useState(null);
  const [secret, setSecret] = useState(null);
  const [notice, setNotice] = useState('');
  // Functional: onCreated may run from a render before another reload (a slow create), whose key is stale.
  const reload = () => setReloadKey((k) => k + 1);
  const columns = [
    { label: 'Name', value: (c) => c.client_name },
    { label: 'Client ID', value: (c) => html`<code>${c.client_id}</code>` },
    { label: 'Type', value: (c) => c.client_type },
    { label: 'Grant types', value: (c) => c.grant_types.join(', ') },
    { label: 'Owner', value: (c) => c.owner ?? '—' },
    {
      label: 'Actions',
      value: (c) =>
        html`<button
          type="button"
          class="secondary"
          aria-label=${`Edit ${c.client_name}`}
          onClick=${() => {
            setNotice('');
            setEditing(c);
          }}
        >
          Edit
        </button>`,
    },
  ];
  return html`
    <${Notice}>${notice}</${Notice}>
    ${secret ? html`<${SecretOnce} label=${`Client secret of ${secret.name}`} secret=${secret.value} onDone=${() => setSecret(null)} />` : null}
    ${
      editing
        ? html`<${EditClient}
            key=${editing.client_id}
            client=${editing}
            onChanged=${(c) => {
              setEditing(c);
              reload();
            }}
            onSecret=${(value) => setSecret({ name: editing.client_name, value })}
            onClose=${(message) => {
              setEditing(null);
              setNotice(message);
              reload();
            }}
          />`
        : null
    }
    <${DataTable} path="/admin/clients?limit=20" columns=${columns} caption="Clients" rowKey=${(c) => c.client_id} reloadKey=${reloadKey} empty="No clients yet." />
    <${CreateClient} onCreated=${(c) => {
      setNotice(`Client ${c.client_name} created.`);
      if (c.client_secret) setSecret({ name: c.client_name, value: c.client_secret });
      reload();
    }} />
    <${RegistrationTokens} />`;
}
