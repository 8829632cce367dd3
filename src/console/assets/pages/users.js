// Users (docs/guides/portal.md, operator pages): list, create, edit name / e-mail / roles, set a password, disable or
// enable, delete, through /api/admin/users. Destructive actions ask first.
import { html, useState } from '../html.js';
import { api, apiFetch, enc } from '../api.js';
import { ConfirmDialog, DataTable, ErrorBox, Field, fieldErrors, Notice, useConfirm } from '../components.js';

/** The roles the form's boxes name (docs/security.md, "Roles"). */
function rolesOf(form) {
  return [...(form.admin ? ['admin'] : []), ...(form.auditor ? ['auditor'] : [])];
}

function CreateUser({ onCreated }) {
  const [form, setForm] = useState({ Email: '', Name: '', Password: '', admin: false, auditor: false });
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const set = (name) => (value) => setForm({ ...form, [name]: value });
  const submit = async (event) => {
    event.preventDefault();
    setError(null);
    setBusy(true); // a double click must not create the user twice
    try {
      const { Email, Name, Password } = form;
      const user = await api('/admin/users', {
        method: 'POST',
        body: { Email, Name, Password, Roles: rolesOf(form) },
      });
      setForm({ Email: '', Name: '', Password: '', admin: false, auditor: false });
      onCreated(user);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  const errors = fieldErrors(error);
  return html`<section aria-labelledby="create-user-title">
    <h2 id="create-user-title">Create a user</h2>
    <form onSubmit=${submit}>
      <${Field}
        label="E-mail"
        type="email"
        value=${form.Email}
        onInput=${set('Email')}
        error=${errors.Email}
        required
        autocomplete="off"
      />
      <${Field} label="Name" value=${form.Name} onInput=${set('Name')} error=${errors.Name} required />
      <${Field}
        label="Password"
        type="password"
        value=${form.Password}
        onInput=${set('Password')}
        error=${errors.Password}
        required
        autocomplete="new-password"
      />
      <${Field} label="Administrator (admin role)" type="checkbox" value=${form.admin} onInput=${set('admin')} />
      <${Field}
        label="Auditor (auditor role: reads only)"
        type="checkbox"
        value=${form.auditor}
        onInput=${set('auditor')}
      />
      <${ErrorBox} error=${error} />
      <button type="submit" disabled=${busy}>Create user</button>
    </form>
  </section>`;
}

function EditUser({ user, onChanged, onClose }) {
  const [form, setForm] = useState({
    Email: user.Email,
    Name: user.Name,
    admin: user.Roles.includes('admin'),
    auditor: user.Roles.includes('auditor'),
  });
  const [password, setPassword] = useState('');
  const [error, setError] = useState(null);
  const [notice, setNotice] = useState('');
  const { ask, dialogProps } = useConfirm();
  const base = `/admin/users/${enc(user.Id)}`;
  const run = async (action, message) => {
    setError(null);
    setNotice('');
    try {
      const changed = await action();
      setNotice(message);
      onChanged(changed);
    } catch (err) {
      setError(err);
    }
  };
  const save = (event) => {
    event.preventDefault();
    const body = { Email: form.Email, Name: form.Name, Roles: rolesOf(form) };
    run(() => api(base, { method: 'PATCH', body }), 'Changes saved.');
  };
  const setNewPassword = (event) => {
    event.preventDefault();
    run(async () => {
      await apiFetch(`${base}/password`, { method: 'PUT', body: { Password: password } });
      setPassword('');
      return user;
    }, 'Password set.');
  };
  const toggle = () =>
    user.Disabled
      ? run(() => api(`${base}/enable`, { method: 'POST' }), 'User enabled.')
      : ask({
          title: `Disable ${user.Email}?`,
          message: 'They cannot sign in, their sessions end and their grants are revoked at once.',
          confirmLabel: 'Disable user',
          action: () => run(() => api(`${base}/disable`, { method: 'POST' }), 'User disabled.'),
        });
  const remove = () =>
    ask({
      title: `Delete ${user.Email}?`,
      message: 'The user, their sessions, grants and tokens are deleted. This cannot be undone.',
      confirmLabel: 'Delete user',
      action: async () => {
        try {
          await apiFetch(base, { method: 'DELETE' });
          onClose(`User ${user.Email} deleted.`);
        } catch (err) {
          setError(err);
        }
      },
    });
  const errors = fieldErrors(error);
  return html`<section class="panel" aria-labelledby="edit-user-title">
    <h2 id="edit-user-title">Edit ${user.Email}</h2>
    <${Notice}>${notice}</${Notice}>
    <${ErrorBox} error=${error} />
    <form onSubmit=${save}>
      <${Field} label="E-mail" type="email" value=${form.Email} onInput=${(v) => setForm({ ...form, Email: v })} error=${errors.Email} required />
      <${Field} label="Name" value=${form.Name} onInput=${(v) => setForm({ ...form, Name: v })} error=${errors.Name} required />
      <${Field} label="Administrator (admin role)" type="checkbox" value=${form.admin} onInput=${(v) => setForm({ ...form, admin: v })} />
      <${Field}
        label="Auditor (auditor role: reads only)"
        type="checkbox"
        value=${form.auditor}
        onInput=${(v) => setForm({ ...form, auditor: v })}
      />
      <button type="submit">Save changes</button>
    </form>
    <form onSubmit=${setNewPassword}>
      <${Field} label="New password" type="password" value=${password} onInput=${setPassword} error=${errors.Password} required autocomplete="new-password" />
      <button type="submit">Set password</button>
    </form>
    <div class="actions">
      <button type="button" class=${user.Disabled ? '' : 'danger'} onClick=${toggle}>${user.Disabled ? 'Enable user' : 'Disable user'}</button>
      <button type="button" class="danger" onClick=${remove}>Delete user</button>
      <button type="button" class="secondary" onClick=${() => onClose('')}>Close</button>
    </div>
    <${ConfirmDialog} ...${dialogProps} />
  </section>`;
}

export function UsersPage() {
  const [reloadKey, setReloadKey] = useState(0);
  const [editing, setEditing] = useState(null);
  const [notice, setNotice] = useState('');
  // Functional: onCreated may run from a render before another reload (a slow create), whose key is stale.
  const reload = () => setReloadKey((k) => k + 1);
  const columns = [
    { label: 'E-mail', value: (u) => u.Email },
    { label: 'Name', value: (u) => u.Name },
    { label: 'Roles', value: (u) => (u.Roles.length ? u.Roles.join(', ') : 'none') },
    { label: 'Status', value: (u) => (u.Disabled ? 'Disabled' : 'Active') },
    {
      label: 'Actions',
      value: (u) =>
        html`<button
          type="button"
          class="secondary"
          aria-label=${`Edit ${u.Email}`}
          onClick=${() => {
            setNotice('');
            setEditing(u);
          }}
        >
          Edit
        </button>`,
    },
  ];
  return html`
    <${Notice}>${notice}</${Notice}>
    ${
      editing
        ? html`<${EditUser}
            key=${editing.Id}
            user=${editing}
            onChanged=${(u) => {
              setEditing(u);
              reload();
            }}
            onClose=${(message) => {
              setEditing(null);
              setNotice(message);
              reload();
            }}
          />`
        : null
    }
    <${DataTable} path="/admin/users?limit=20" columns=${columns} caption="Users" reloadKey=${reloadKey} empty="No users yet." />
    <${CreateUser} onCreated=${(u) => {
      setNotice(`User ${u.Email} created.`);
      reload();
    }} />`;
}
