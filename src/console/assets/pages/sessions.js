// Sessions and grants (docs/guides/portal.md): pick a user, list their sessions and grants; list a client's
// grants; end a session or revoke a grant, each confirmed first (docs/guides/admin-api.md, Grants and
// sessions). The picked user and client live in the URL query, so reload and back/forward keep them.
import { html, useEffect, useState } from '../html.js';
import { api, apiFetch, enc } from '../api.js';
import { ConfirmDialog, DataTable, ErrorBox, Field, Loading, Notice, useConfirm } from '../components.js';
import { Time, useUrlQuery, withQuery } from './operator-common.js';

/** The users to pick from: all of them in pages, or those whose address contains the search. */
function UserPicker({ email, onSearch, onPick }) {
  const [text, setText] = useState(email ?? '');
  const submit = (event) => {
    event.preventDefault();
    onSearch(text.trim());
  };
  const columns = [
    { label: 'E-mail', value: (u) => u.Email },
    { label: 'Name', value: (u) => u.Name },
    { label: 'Status', value: (u) => (u.Disabled ? 'Disabled' : 'Active') },
    {
      label: 'Actions',
      value: (u) =>
        html`<button
          type="button"
          class="secondary"
          aria-label=${`Show sessions and grants of ${u.Email}`}
          onClick=${() => onPick(u.Id)}
        >
          Show sessions and grants
        </button>`,
    },
  ];
  return html`<section aria-labelledby="pick-user-title">
    <h2 id="pick-user-title">Pick a user</h2>
    <form role="search" aria-label="Users" onSubmit=${submit}>
      <${Field} label="E-mail contains" type="search" value=${text} onInput=${setText} autocomplete="off" />
      <button type="submit">Search users</button>
    </form>
    <${DataTable}
      path=${withQuery('/admin/users?limit=10', { email })}
      columns=${columns}
      caption=${email ? `Users whose e-mail contains “${email}”` : 'Users'}
      empty=${email ? `No user’s e-mail contains “${email}”.` : 'No users yet.'}
    />
  </section>`;
}

/** Grants (of a user or of a client) with a Revoke button each. */
function GrantsTable({ path, caption, empty, reloadKey, showAccount, onRevoke }) {
  const columns = [
    showAccount
      ? { label: 'User', value: (g) => html`<code>${g.Account}</code>` }
      : { label: 'Client', value: (g) => html`<code>${g.ClientId}</code>` },
    { label: 'Scopes', value: (g) => g.Scopes.join(' ') },
    { label: 'Granted', value: (g) => html`<${Time} value=${g.CreatedAtUtc} />` },
    { label: 'Expires', value: (g) => html`<${Time} value=${g.ExpiresAtUtc} none="never" />` },
    {
      label: 'Actions',
      value: (g) =>
        html`<button
          type="button"
          class="danger"
          aria-label=${`Revoke grant of ${showAccount ? g.Account : g.ClientId}`}
          onClick=${() => onRevoke(g)}
        >
          Revoke grant
        </button>`,
    },
  ];
  return html`<${DataTable}
    path=${path}
    columns=${columns}
    caption=${caption}
    empty=${empty}
    reloadKey=${reloadKey}
  />`;
}

/** One user's sessions and grants; `id` is the user's sub (or e-mail address). */
function UserActivity({ id, reloadKey, onEndSession, onRevoke }) {
  const [state, setState] = useState({ loading: true });
  const load = async () => {
    setState({ loading: true });
    try {
      setState({ user: await api(`/admin/users/${enc(id)}`) });
    } catch (error) {
      setState({ error });
    }
  };
  useEffect(() => {
    load();
  }, [id]);
  if (state.loading) return html`<${Loading} label="Loading the user…" />`;
  if (state.error) return html`<${ErrorBox} error=${state.error} onRetry=${load} />`;
  const user = state.user;
  const base = `/admin/users/${enc(user.Id)}`;
  const sessionColumns = [
    { label: 'Session', value: (s) => html`<code>${s.Id}</code>` },
    { label: 'Clients', value: (s) => (s.ClientIds.length ? s.ClientIds.join(', ') : 'none') },
    { label: 'Signed in', value: (s) => html`<${Time} value=${s.SignedInAtUtc} />` },
    { label: 'Expires', value: (s) => html`<${Time} value=${s.ExpiresAtUtc} none="never" />` },
    {
      label: 'Actions',
      value: (s) =>
        html`<button
          type="button"
          class="danger"
          aria-label=${`End session ${s.Id}`}
          onClick=${() => onEndSession(s, user)}
        >
          End session
        </button>`,
    },
  ];
  return html`<section class="panel" aria-labelledby="user-sessions-title">
      <h2 id="user-sessions-title">Sessions of ${user.Email}</h2>
      <${DataTable}
        path=${`${base}/sessions?limit=20`}
        columns=${sessionColumns}
        caption=${`Signed-in sessions of ${user.Email}`}
        empty=${`${user.Email} has no signed-in session.`}
        reloadKey=${reloadKey}
      />
    </section>
    <section class="panel" aria-labelledby="user-grants-title">
      <h2 id="user-grants-title">Grants of ${user.Email}</h2>
      <${GrantsTable}
        path=${`${base}/grants?limit=20`}
        caption=${`Grants ${user.Email} consented to`}
        empty=${`${user.Email} has granted no client anything.`}
        reloadKey=${reloadKey}
        onRevoke=${onRevoke}
      />
    </section>`;
}

function ClientGrants({ clientId, onShow, reloadKey, onRevoke }) {
  const [text, setText] = useState(clientId ?? '');
  const submit = (event) => {
    event.preventDefault();
    onShow(text.trim());
  };
  return html`<section aria-labelledby="client-grants-title">
    <h2 id="client-grants-title">Grants of a client</h2>
    <form onSubmit=${submit}>
      <${Field} label="Client ID" value=${text} onInput=${setText} autocomplete="off" required />
      <button type="submit">Show client grants</button>
    </form>
    ${
      clientId
        ? html`<${GrantsTable}
            path=${`/admin/clients/${enc(clientId)}/grants?limit=20`}
            caption=${`Grants users gave ${clientId}`}
            empty=${`No user has granted ${clientId} anything.`}
            reloadKey=${reloadKey}
            showAccount=${true}
            onRevoke=${onRevoke}
          />`
        : null
    }
  </section>`;
}

export function SessionsPage() {
  const [query, push] = useUrlQuery();
  const [reloadKey, setReloadKey] = useState(0);
  const [notice, setNotice] = useState('');
  const [error, setError] = useState(null);
  const { ask, dialogProps } = useConfirm();
  const go = (changes) => {
    setNotice('');
    setError(null);
    push({ ...query, ...changes });
  };
  const run = async (path, message) => {
    setNotice('');
    setError(null);
    try {
      await apiFetch(path, { method: 'DELETE' });
      setNotice(message);
    } catch (err) {
      setError(err);
    }
    setReloadKey((k) => k + 1);
  };
  const endSession = (session, user) =>
    ask({
      title: `End this session of ${user.Email}?`,
      message:
        'They are signed out of Signet and sign in again next time. Their grants and refresh tokens stay: revoke a grant to end those.',
      confirmLabel: 'End session',
      action: () =>
        run(
          `/admin/sessions/${enc(session.Id)}`,
          `Session ${session.Id} of ${user.Email} ended: they sign in again next time.`,
        ),
    });
  const revoke = (grant) =>
    ask({
      title: `Revoke the grant of ${grant.Account} to ${grant.ClientId}?`,
      message:
        'Its refresh tokens and codes stop working at once and the user is asked to consent again. Access tokens already issued stay valid until they expire.',
      confirmLabel: 'Revoke grant',
      action: () =>
        run(`/admin/grants/${enc(grant.Id)}`, `Grant to ${grant.ClientId} revoked: its refresh tokens no longer work.`),
    });
  return html`
    <${Notice}>${notice}</${Notice}>
    <${ErrorBox} error=${error} />
    <${UserPicker} key=${query.email ?? ''} email=${query.email} onSearch=${(email) => go({ email })} onPick=${(user) => go({ user })} />
    ${
      query.user
        ? html`<${UserActivity}
            key=${query.user}
            id=${query.user}
            reloadKey=${reloadKey}
            onEndSession=${endSession}
            onRevoke=${revoke}
          />`
        : null
    }
    <${ClientGrants}
      key=${query.client ?? ''}
      clientId=${query.client}
      onShow=${(client) => go({ client })}
      reloadKey=${reloadKey}
      onRevoke=${revoke}
    />
    <${ConfirmDialog} ...${dialogProps} />`;
}
