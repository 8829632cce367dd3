// The portal's delivery log: per endpoint (GET /api/webhooks/{id}/deliveries, paged by the server), one
// delivery with its attempts (GET /api/webhooks/deliveries/{id}), redeliver (POST …/redeliver) and
// "recover since" (POST /api/webhooks/{id}/recover), both confirmed first. The endpoint and the open
// delivery live in the URL query (?endpoint_id=…&delivery_id=…), so links and back/forward work.
import { html, useEffect, useState } from '../html.js';
import { api, enc } from '../api.js';
import {
  Attempts,
  ConfirmDialog,
  DataTable,
  Empty,
  ErrorBox,
  Field,
  Loading,
  Notice,
  Time,
  useConfirm,
} from '../components.js';
import { useUrlQuery, withQuery } from './operator-common.js';
import { RecoverForm, STATE_OPTIONS, useRedeliver } from './log-common.js';
import { deliveryHref, EndpointPicker, useEndpoints } from './portal-common.js';

/** The portal's words for "Recover since…": one client, its own endpoints. */
const RECOVER_WORDS = {
  hint: 'Your local time; sent as UTC.',
  message: (_endpointId, since) =>
    `Every delivery to this endpoint created since ${since} (UTC) that failed for good is queued again and sent now, with a fresh retry schedule.`,
};

/** One delivery; keyed by its id, so an answer for a delivery no longer open never shows. */
function DeliveryDetail({ id, ask, onChanged }) {
  const [state, setState] = useState({ loading: true });
  const path = `/webhooks/deliveries/${enc(id)}`;
  const load = async () => {
    try {
      setState({ delivery: await api(path) });
    } catch (err) {
      setState({ error: err });
    }
  };
  const { result, error, confirm } = useRedeliver(ask, path, async () => {
    await load();
    onChanged();
  });
  useEffect(() => {
    load();
  }, []);
  if (state.loading) return html`<${Loading} label="Loading the delivery…" />`;
  if (state.error) return html`<${ErrorBox} error=${state.error} onRetry=${load} />`;
  const d = state.delivery;
  const confirmRedeliver = () =>
    confirm(
      d,
      `The ${d.EventType} event is sent to your endpoint again now, with a fresh retry schedule and the same delivery id (your idempotency key).`,
    );
  return html`<section class="panel" aria-labelledby="delivery-title">
    <h2 id="delivery-title">Delivery <code>${d.Id}</code></h2>
    <dl class="details">
      <dt>Event</dt>
      <dd><code>${d.EventId}</code> (${d.EventType})</dd>
      <dt>State</dt>
      <dd>${d.State}</dd>
      <dt>Attempts</dt>
      <dd>${d.AttemptCount}</dd>
      <dt>Next attempt</dt>
      <dd><${Time} value=${d.NextAttemptAtUtc} none="none scheduled" /></dd>
      <dt>Created</dt>
      <dd><${Time} value=${d.CreatedAtUtc} /></dd>
    </dl>
    <div class="actions">
      <button type="button" onClick=${confirmRedeliver} disabled=${d.State === 'pending'}>Redeliver…</button>
      <button type="button" class="secondary" onClick=${load}>Refresh this delivery</button>
    </div>
    ${d.State === 'pending' ? html`<p class="hint">It is still being sent: redeliver it once it has settled.</p>` : null}
    <${ErrorBox} error=${error} />
    ${result ? html`<${Notice}>Redelivery queued: <code>${result.Id}</code> is ${result.State} again.</${Notice}>` : null}
    <h3>Attempts</h3>
    <${Attempts} attempts=${d.Attempts} empty="No attempt yet: it is waiting to be sent." />
  </section>`;
}

function DeliveryLog({ endpointId, state, reloadKey }) {
  const columns = [
    { label: 'Delivery', value: (d) => html`<a href=${deliveryHref(d)}><code>${d.Id}</code></a>` },
    { label: 'Event type', value: (d) => d.EventType },
    { label: 'State', value: (d) => d.State },
    { label: 'Attempts', value: (d) => String(d.AttemptCount) },
    { label: 'Last status', value: (d) => d.LastStatusCode ?? d.LastError ?? '—' },
    { label: 'Created (UTC)', value: (d) => html`<${Time} value=${d.CreatedAtUtc} />` },
  ];
  return html`<${DataTable}
    path=${withQuery(`/webhooks/${enc(endpointId)}/deliveries`, { limit: 20, State: state })}
    columns=${columns}
    caption="Deliveries to this endpoint, newest first"
    empty="No delivery to this endpoint yet."
    reloadKey=${reloadKey}
  />`;
}

export function PortalDeliveriesPage() {
  const endpoints = useEndpoints();
  const [query, push] = useUrlQuery();
  const [reloadKey, setReloadKey] = useState(0);
  const { ask, dialogProps } = useConfirm();
  const reload = () => setReloadKey((k) => k + 1);
  if (endpoints.loading) return html`<${Loading} label="Loading your endpoints…" />`;
  if (endpoints.error) return html`<${ErrorBox} error=${endpoints.error} onRetry=${endpoints.reload} />`;
  if (endpoints.endpoints.length === 0)
    return html`<${Empty}>No endpoint yet: <a href="/console/portal/endpoints">add one</a> first.</${Empty}>`;
  const endpointId = query.endpoint_id ?? '';
  const known = endpoints.endpoints.some((e) => e.Id === endpointId);
  return html`<form class="filters" onSubmit=${(e) => e.preventDefault()}>
      <${EndpointPicker}
        endpoints=${endpoints.endpoints}
        value=${known ? endpointId : ''}
        onInput=${(id) => push({ endpoint_id: id })}
      />
      ${
        known
          ? html`<${Field}
                label="State"
                type="select"
                value=${query.State ?? ''}
                onInput=${(s) => push({ endpoint_id: endpointId, State: s })}
                options=${STATE_OPTIONS}
              />
              <div class="actions">
                <button type="button" class="secondary" onClick=${reload}>Refresh the log</button>
              </div>`
          : null
      }
    </form>
    ${endpointId && !known ? html`<p class="error" role="alert">No endpoint ${endpointId} among yours.</p>` : null}
    ${
      known
        ? html`${
              query.delivery_id
                ? html`<${DeliveryDetail}
                    key=${query.delivery_id}
                    id=${query.delivery_id}
                    ask=${ask}
                    onChanged=${reload}
                  />`
                : null
            }
            <h2>Delivery log</h2>
            <${DeliveryLog} endpointId=${endpointId} state=${query.State} reloadKey=${reloadKey} />
            <${RecoverForm}
              path=${`/webhooks/${enc(endpointId)}/recover`}
              endpointId=${endpointId}
              words=${RECOVER_WORDS}
              ask=${ask}
              onRecovered=${reload}
            />`
        : html`<p>Choose an endpoint to see its deliveries.</p>`
    }
    <${ConfirmDialog} ...${dialogProps} />`;
}
