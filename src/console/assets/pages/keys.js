// Signing keys (docs/guides/portal.md): the stored keys as /api/admin/keys gives them (never key material) and a
// rotation through POST /api/admin/keys/rotate, confirmed first because every new token is signed with
// the new key from then on (docs/guides/admin-api.md, Signing keys).
import { html, useEffect, useState } from '../html.js';
import { api } from '../api.js';
import { ConfirmDialog, Empty, ErrorBox, Loading, Notice, useConfirm } from '../components.js';
import { Time } from './operator-common.js';

const USE = { jws: 'Tokens (JWS)', cookie: 'Cookies' };
const STATE = { signing: 'Signing', pending: 'Pending', retired: 'Retired' };

function KeyTable({ keys, fresh }) {
  if (keys.length === 0)
    return html`<${Empty}>No signing keys are stored yet: Signet creates them on first start.</${Empty}>`;
  return html`<div class="table-wrap">
    <table>
      <caption>
        Signing keys: signing first, then pending ones (published, signing from their start), then retired ones still
        published
      </caption>
      <thead>
        <tr>
          <th scope="col">Key id (kid)</th>
          <th scope="col">Algorithm</th>
          <th scope="col">Signs</th>
          <th scope="col">State</th>
          <th scope="col">Created</th>
          <th scope="col">Signs from</th>
          <th scope="col">Signs until</th>
        </tr>
      </thead>
      <tbody>
        ${keys.map(
          (k) =>
            html`<tr key=${k.Kid}>
              <th scope="row"><code>${k.Kid}</code></th>
              <td>${k.Alg}</td>
              <td>${USE[k.Use] ?? k.Use}</td>
              <td>${STATE[k.State] ?? k.State}${fresh.includes(k.Kid) ? ' (new)' : ''}</td>
              <td><${Time} value=${k.CreatedAtUtc} /></td>
              <td><${Time} value=${k.ActivatesAtUtc} /></td>
              <td><${Time} value=${k.RetiredAtUtc} none="not replaced" /></td>
            </tr>`,
        )}
      </tbody>
    </table>
  </div>`;
}

export function KeysPage() {
  const [state, setState] = useState({ loading: true });
  const [fresh, setFresh] = useState([]);
  const [notice, setNotice] = useState('');
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const { ask, dialogProps } = useConfirm();
  const load = async () => {
    setState({ loading: true });
    try {
      setState({ keys: (await api('/admin/keys')).Items });
    } catch (err) {
      setState({ error: err });
    }
  };
  useEffect(() => {
    load();
  }, []);
  const rotate = async () => {
    setBusy(true);
    setNotice('');
    setError(null);
    try {
      const rotated = await api('/admin/keys/rotate', { method: 'POST' });
      // New: every key the answer lists that was not listed before (the JWS keys in Kids, and the cookie key).
      const known = new Set((state.keys ?? []).map((k) => k.Kid));
      setFresh(rotated.Items.map((k) => k.Kid).filter((kid) => !known.has(kid)));
      setState({ keys: rotated.Items });
      setNotice(
        `Keys rotated. ${rotated.Kids.join(', ')} are published now and sign new tokens from ${new Date(rotated.ActivatesAtUtc).toLocaleString()}.`,
      );
    } catch (err) {
      setError(err);
    }
    setBusy(false);
  };
  const confirmRotate = () =>
    ask({
      title: 'Rotate the signing keys?',
      message:
        'New keys are created and published at /oauth/jwks at once; every instance signs new tokens with them after KEY_ROTATION_DELAY (a minute by default), when the current keys retire. Retired keys stay published, so tokens they signed stay valid until they expire. A rotation cannot be undone.',
      confirmLabel: 'Rotate keys',
      action: rotate,
    });
  let body;
  if (state.loading) body = html`<${Loading} label="Loading the signing keys…" />`;
  else if (state.error) body = html`<${ErrorBox} error=${state.error} onRetry=${load} />`;
  else body = html`<${KeyTable} keys=${state.keys} fresh=${fresh} />`;
  return html`
    <${Notice}>${notice}</${Notice}>
    <${ErrorBox} error=${error} />
    <p>Signet signs ID and access tokens with these keys and publishes the public halves at <code>/oauth/jwks</code>.</p>
    <div class="actions">
      <button type="button" class="danger" onClick=${confirmRotate} disabled=${busy || Boolean(state.error)}>
        Rotate keys
      </button>
    </div>
    ${body}
    <${ConfirmDialog} ...${dialogProps} />`;
}
