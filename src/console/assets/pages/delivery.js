// One delivery with every attempt (GET /api/admin/webhook-deliveries/{id}): start, status code,
// duration, error kind and detail, and the first 4 KiB of the response. Redeliver (confirmed first)
// sends it again with the same delivery id; "Recover since…" re-queues its endpoint's failed deliveries.
import { html, useEffect, useState } from '../html.js';
import { api, enc } from '../api.js';
import { Attempts, ConfirmDialog, ErrorBox, Loading, Notice, Time, useConfirm } from '../components.js';
import { RecoverForm, useRedeliver } from './log-common.js';

function Summary({ delivery: d }) {
  return html`<dl class="details">
    <dt>State</dt>
    <dd>${d.State}</dd>
    <dt>Event</dt>
    <dd>
      <a href=${`/console/events/${enc(d.EventId)}`}><code>${d.EventId}</code></a> (${d.EventType})
    </dd>
    <dt>Endpoint</dt>
    <dd>
      <a href=${`/console/webhook-endpoints/${enc(d.EndpointId)}`}><code>${d.EndpointId}</code></a>
    </dd>
    <dt>Client</dt>
    <dd>
      <a href=${`/console/deliveries?client_id=${enc(d.ClientId)}`}><code>${d.ClientId}</code></a>
    </dd>
    <dt>Attempts</dt>
    <dd>${d.AttemptCount}</dd>
    <dt>Next attempt</dt>
    <dd><${Time} value=${d.NextAttemptAtUtc} none="none scheduled" /></dd>
    <dt>Created</dt>
    <dd><${Time} value=${d.CreatedAtUtc} /></dd>
    <dt>Updated</dt>
    <dd><${Time} value=${d.UpdatedAtUtc} /></dd>
  </dl>`;
}

export function DeliveryPage({ params }) {
  const [state, setState] = useState({ loading: true });
  const { ask, dialogProps } = useConfirm();
  const base = `/admin/webhook-deliveries/${enc(params.id)}`;
  const load = async () => {
    try {
      setState({ delivery: await api(base) });
    } catch (err) {
      setState({ error: err });
    }
  };
  const { result, error, reset, confirm } = useRedeliver(ask, base, load);
  useEffect(() => {
    setState({ loading: true });
    reset();
    load();
  }, [params.id]);
  const back = html`<p><a href="/console/deliveries">The delivery log</a></p>`;
  if (state.loading) return html`${back}<${Loading} label="Loading the delivery…" />`;
  if (state.error) return html`${back}<${ErrorBox} error=${state.error} onRetry=${load} />`;
  const d = state.delivery;
  const confirmRedeliver = () =>
    confirm(
      d,
      `The ${d.EventType} event is sent to endpoint ${d.EndpointId} again now, with a fresh retry schedule and the same delivery id (the receiver's idempotency key).`,
    );
  return html`${back}
    <section class="panel" aria-labelledby="delivery-title">
      <h2 id="delivery-title">Delivery <code>${d.Id}</code></h2>
      <${Summary} delivery=${d} />
      <div class="actions">
        <button type="button" onClick=${confirmRedeliver} disabled=${d.State === 'pending'}>Redeliver…</button>
        <a class="button-link" href=${`/console/deliveries?endpoint_id=${enc(d.EndpointId)}`}
          >Delivery log of this endpoint</a
        >
      </div>
      ${d.State === 'pending' ? html`<p class="hint">A pending delivery is still being sent: redeliver it once it has settled.</p>` : null}
      <${ErrorBox} error=${error} />
      ${
        result
          ? html`<${Notice}>
              Redelivery queued: <a href=${`/console/deliveries/${enc(result.Id)}`}><code>${result.Id}</code></a> is
              ${result.State} again.
            </${Notice}>`
          : null
      }
    </section>
    <section aria-labelledby="attempts-title">
      <h2 id="attempts-title">Attempts</h2>
      <button type="button" class="secondary" onClick=${load}>Refresh</button>
      <${Attempts} attempts=${d.Attempts} wrapClass="table-wrap log-list" />
    </section>
    <${RecoverForm}
      path=${`/admin/webhook-endpoints/${enc(d.EndpointId)}/recover`}
      endpointId=${d.EndpointId}
      logLink=${`/console/deliveries?endpoint_id=${enc(d.EndpointId)}`}
      onRecovered=${load}
      ask=${ask}
    />
    <${ConfirmDialog} ...${dialogProps} />`;
}
