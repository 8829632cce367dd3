// What the delivery logs (the operator's and the integrator portal's) share: type options from the event
// catalogue, the state names of a delivery, "Recover since…" for one endpoint and redeliver, both
// confirmed first (docs/guides/admin-api.md, Delivery log).
import { html, useState } from '../html.js';
import { api } from '../api.js';
import { ConfirmDialog, ErrorBox, Field, Notice, useConfirm } from '../components.js';
import { fromLocalInput } from './operator-common.js';

/** Options for a type <select>: "any" first, then each type of the catalogue (and `current` if unknown). */
export function typeOptions(types, current, anyLabel = 'Any type') {
  const options = [{ value: '', label: anyLabel }, ...types.map((t) => ({ value: t.type, label: t.type }))];
  if (current && !types.some((t) => t.type === current)) options.push({ value: current, label: current });
  return options;
}

export const STATE_OPTIONS = [
  { value: '', label: 'Any state' },
  { value: 'pending', label: 'Pending (waiting or retrying)' },
  { value: 'succeeded', label: 'Succeeded' },
  { value: 'failed', label: 'Failed (for good)' },
];

/** The admin log's words for "Recover since…"; the portal passes its own (it has one client's endpoints). */
const ADMIN_RECOVER = {
  hint: 'Your local time; sent as UTC. Deliveries of this endpoint created since then that failed are sent again.',
  message: (endpointId, since) =>
    `Every delivery to endpoint ${endpointId} created since ${since} (UTC) that failed for good is queued again and sent now, with a fresh retry schedule.`,
};

/**
 * "Recover since…": re-queues every failed delivery to one endpoint created since a time (POST `path`:
 * /api/admin/webhook-endpoints/{id}/recover or, in the portal, /api/webhooks/{id}/recover). The time is
 * typed in local time and sent as RFC 3339 UTC. `logLink`: where the result links to, if anywhere.
 */
export function RecoverForm({ path, endpointId, onRecovered, ask: sharedAsk, words = ADMIN_RECOVER, logLink }) {
  const [since, setSince] = useState('');
  const [result, setResult] = useState(null);
  const [error, setError] = useState(null);
  const own = useConfirm();
  const ask = sharedAsk ?? own.ask;
  const recover = async (sinceUtc) => {
    try {
      const body = await api(path, { method: 'POST', body: { Since: sinceUtc } });
      setResult({ requeued: body.Requeued, since: sinceUtc });
      onRecovered?.();
    } catch (err) {
      setError(err);
    }
  };
  const submit = (event) => {
    event.preventDefault();
    setResult(null);
    setError(null);
    const sinceUtc = fromLocalInput(since);
    if (!sinceUtc) return setError(new Error('Choose the time to recover from.'));
    ask({
      title: 'Recover failed deliveries?',
      message: words.message(endpointId, sinceUtc),
      confirmLabel: 'Recover deliveries',
      action: () => recover(sinceUtc),
    });
  };
  return html`<section class="panel" aria-labelledby="recover-title">
    <h2 id="recover-title">Recover since…</h2>
    <form class="filters" onSubmit=${submit}>
      <${Field}
        label="Recover failed deliveries since"
        type="datetime-local"
        value=${since}
        onInput=${setSince}
        hint=${words.hint}
        required
      />
      <div class="actions"><button type="submit">Recover…</button></div>
    </form>
    <${ErrorBox} error=${error} />
    ${
      result
        ? html`<${Notice}>
            ${`Re-queued ${result.requeued} failed ${result.requeued === 1 ? 'delivery' : 'deliveries'} created since ${result.since}.`}
            ${logLink ? html` <a href=${logLink}>See this endpoint’s delivery log</a>.` : null}
          </${Notice}>`
        : null
    }
    ${sharedAsk ? null : html`<${ConfirmDialog} ...${own.dialogProps} />`}
  </section>`;
}

/**
 * Redeliver, confirmed first: `confirm(delivery, message)` asks, then POSTs `{path}/redeliver` and awaits
 * `onDone()` (re-read what the page shows). `result` is the re-queued delivery, `error` what went wrong.
 */
export function useRedeliver(ask, path, onDone) {
  const [result, setResult] = useState(null);
  const [error, setError] = useState(null);
  const reset = () => {
    setResult(null);
    setError(null);
  };
  const redeliver = async () => {
    try {
      setResult(await api(`${path}/redeliver`, { method: 'POST' }));
      await onDone();
    } catch (err) {
      setError(err);
    }
  };
  const confirm = (delivery, message) => {
    reset();
    ask({ title: `Redeliver ${delivery.Id}?`, message, confirmLabel: 'Redeliver', action: redeliver });
  };
  return { result, error, reset, confirm };
}
