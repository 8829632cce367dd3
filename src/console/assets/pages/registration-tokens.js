// Registration tokens on the Clients page (docs/guides/admin-api.md, Registration tokens): issue one (the
// token shown once), list them with their state and uses, revoke one (confirmed first), through
// /api/admin/registration-tokens. Issuing is refused (404) while dynamic registration is off; the list
// still shows what was issued before.
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
  Time,
  useConfirm,
} from '../components.js';

const LIFETIMES = [
  { value: '3600', label: '1 hour' },
  { value: '86400', label: '1 day' },
  { value: '604800', label: '7 days' },
  { value: '2592000', label: '30 days' },
  { value: '7776000', label: '90 days' },
];
const STATUS = { active: 'Active', used_up: 'Used up', expired: 'Expired', revoked: 'Revoked' };

function IssueToken({ onIssued }) {
  const empty = { scope: '', uses: '1', lifetime: '86400', description: '' };
  const [form, setForm] = useState(empty);
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const set = (name) => (value) => setForm({ ...form, [name]: value });
  const submit = async (event) => {
    event.preventDefault();
    setError(null);
    setBusy(true); // a double click must not issue two tokens
    try {
      const body = {
        scope: form.scope.trim() || undefined,
        max_uses: Number(form.uses),
        expires_in: Number(form.lifetime),
        description: form.description.trim() || undefined,
      };
      const issued = await api('/admin/registration-tokens', { method: 'POST', body });
      setForm(empty);
      onIssued(issued);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  const errors = fieldErrors(error);
  return html`<form onSubmit=${submit} aria-label="Issue a registration token">
    <${Field}
      label="Scopes"
      hint="API scopes a registered client may have, space-separated (never admin scopes). Empty: sign-in only."
      value=${form.scope}
      onInput=${set('scope')}
      error=${errors.scope}
    />
    <${Field}
      label="Clients it may register"
      type="number"
      min="1"
      max="1000"
      value=${form.uses}
      onInput=${set('uses')}
      error=${errors.max_uses}
      required
    />
    <${Field} label="Expires in" type="select" value=${form.lifetime} onInput=${set('lifetime')} options=${LIFETIMES} />
    <${Field}
      label="Description"
      hint="What it is for (optional)."
      value=${form.description}
      onInput=${set('description')}
      error=${errors.description}
    />
    <${ErrorBox} error=${error} />
    <button type="submit" disabled=${busy}>Issue token</button>
  </form>`;
}

export function RegistrationTokens() {
  const [reloadKey, setReloadKey] = useState(0);
  const [issued, setIssued] = useState(null);
  const [notice, setNotice] = useState('');
  const [error, setError] = useState(null);
  const { ask, dialogProps } = useConfirm();
  const reload = () => setReloadKey((k) => k + 1);
  const revoke = (token) =>
    ask({
      title: `Revoke ${token.id}?`,
      message: 'No client can be registered with it any more. The clients it registered stay.',
      confirmLabel: 'Revoke token',
      action: async () => {
        setError(null);
        try {
          await apiFetch(`/admin/registration-tokens/${enc(token.id)}`, { method: 'DELETE' });
          setNotice(`Registration token ${token.id} revoked.`);
          reload();
        } catch (err) {
          setError(err);
        }
      },
    });
  const columns = [
    { label: 'ID', value: (t) => html`<code>${t.id}</code>` },
    { label: 'Status', value: (t) => STATUS[t.status] ?? t.status },
    { label: 'Uses', value: (t) => `${t.use_count} of ${t.max_uses}` },
    { label: 'Expires', value: (t) => html`<${Time} value=${t.expires_at} />` },
    { label: 'Scopes', value: (t) => t.scope || 'sign-in only' },
    { label: 'Description', value: (t) => t.description ?? '—' },
    {
      label: 'Actions',
      value: (t) =>
        t.status === 'active'
          ? html`<button type="button" class="danger" aria-label=${`Revoke ${t.id}`} onClick=${() => revoke(t)}>
              Revoke
            </button>`
          : '—',
    },
  ];
  return html`<section aria-labelledby="registration-tokens-title">
    <h2 id="registration-tokens-title">Registration tokens</h2>
    <p>Initial access tokens for dynamic client registration (RFC 7591): each registers as many clients as it allows, until it expires or is revoked.</p>
    <${Notice}>${notice}</${Notice}>
    <${ErrorBox} error=${error} />
    ${issued ? html`<${SecretOnce} label=${`Registration token ${issued.id}`} secret=${issued.registration_token} onDone=${() => setIssued(null)} />` : null}
    <${DataTable} path="/admin/registration-tokens?limit=20" columns=${columns} caption="Registration tokens" rowKey=${(t) => t.id} reloadKey=${reloadKey} empty="No registration tokens." />
    <${IssueToken}
      onIssued=${(t) => {
        setNotice(`Registration token ${t.id} issued.`);
        setIssued(t);
        reload();
      }}
    />
    <${ConfirmDialog} ...${dialogProps} />
  </section>`;
}
