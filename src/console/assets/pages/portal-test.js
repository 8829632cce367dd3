// Send a test event (POST /api/webhooks/{id}/test-events): pick an endpoint and an event type of the
// catalogue, see the example body that will be sent, send it, and follow the delivery until it settles.
import { html, useEffect, useState } from '../html.js';
import { api, enc } from '../api.js';
import { useCatalogue } from '../catalogue.js';
import { Empty, ErrorBox, Field, Loading, Notice } from '../components.js';
import { deliveryHref, EndpointPicker, json, useEndpoints } from './portal-common.js';

/** How often and how long the page re-reads a pending delivery (it settles within seconds on success). */
const POLL_MS = 1000;
const POLL_TIMES = 30;

/** Re-reads the delivery until it is no longer pending (or the page stops asking); returns the latest. */
function useSettling(initial) {
  const [delivery, setDelivery] = useState(initial);
  useEffect(() => {
    setDelivery(initial);
    if (!initial) return undefined;
    // After cleanup (a new Send, leaving the page) a poll still in flight must neither show its answer
    // over the newer delivery nor schedule another poll.
    let live = true;
    let timer;
    let left = POLL_TIMES;
    const poll = async () => {
      let latest;
      try {
        latest = await api(`/webhooks/deliveries/${enc(initial.Id)}`);
      } catch {
        return; // the link below still leads to the delivery log
      }
      if (!live) return;
      setDelivery(latest);
      if (latest.State !== 'pending' || --left <= 0) return;
      timer = setTimeout(poll, POLL_MS);
    };
    timer = setTimeout(poll, POLL_MS);
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [initial]);
  return delivery;
}

function SentDelivery({ sent }) {
  const delivery = useSettling(sent);
  if (!delivery) return null;
  const last = delivery.Attempts?.at(-1);
  return html`<section class="panel" aria-labelledby="sent-title">
    <h2 id="sent-title">The test delivery</h2>
    <${Notice}>
      Test ${delivery.EventType} event queued as delivery <code>${delivery.Id}</code>: ${delivery.State}${
        last ? ` (attempt ${last.Attempt}: ${last.StatusCode ?? last.ErrorKind ?? 'no answer'})` : ''
      }.
    </${Notice}>
    <p><a href=${deliveryHref(delivery)}>See it in the delivery log</a></p>
  </section>`;
}

export function PortalTestPage() {
  const endpoints = useEndpoints();
  const catalogue = useCatalogue();
  const [endpointId, setEndpointId] = useState('');
  const [type, setType] = useState('');
  const [sending, setSending] = useState(false);
  const [sent, setSent] = useState(null);
  const [error, setError] = useState(null);
  if (endpoints.loading) return html`<${Loading} label="Loading your endpoints…" />`;
  if (endpoints.error) return html`<${ErrorBox} error=${endpoints.error} onRetry=${endpoints.reload} />`;
  if (endpoints.endpoints.length === 0)
    return html`<${Empty}>
      No endpoint yet: <a href="/console/portal/endpoints">add one</a> first, then send it a test event.
    </${Empty}>`;
  if (catalogue.error) return html`<${ErrorBox} error=${catalogue.error} onRetry=${catalogue.retry} />`;
  if (!catalogue.types) return html`<${Loading} label="Loading the event catalogue…" />`;
  const chosen = catalogue.types.find((t) => t.type === type);
  const send = async (event) => {
    event.preventDefault();
    setError(null);
    setSent(null);
    if (!endpointId || !chosen) return setError(new Error('Choose an endpoint and an event type.'));
    setSending(true);
    try {
      setSent(await api(`/webhooks/${enc(endpointId)}/test-events`, { method: 'POST', body: { Type: type } }));
    } catch (err) {
      setError(err);
    } finally {
      setSending(false);
    }
  };
  const typeOptions = [
    ...(type ? [] : [{ value: '', label: 'Choose an event type…' }]),
    ...catalogue.types.map((t) => ({ value: t.type, label: t.type })),
  ];
  return html`<p>
      A test event goes to the endpoint you choose only, whether or not it subscribes to the type. Its
      <code>Data</code> is the type's example from the <a href="/console/portal/catalogue">event catalogue</a> (orders
      have <code>Id</code> 0, which no real order has), signed like every delivery.
    </p>
    <form class="panel" onSubmit=${send}>
      <${EndpointPicker} endpoints=${endpoints.endpoints} value=${endpointId} onInput=${setEndpointId} />
      <${Field}
        label="Event type"
        type="select"
        value=${type}
        onInput=${setType}
        options=${typeOptions}
        hint=${chosen?.summary}
      />
      ${
        chosen
          ? html`<h2 id="example-title">What will be sent</h2>
              <p class="hint">Id, OccurredAtUtc and Timestamp are the delivery's own; Data is exactly this.</p>
              <pre
                class="payload"
                tabindex="0"
                role="region"
                aria-labelledby="example-title"
              ><code>${json(chosen.example)}</code></pre>`
          : null
      }
      <div class="actions">
        <button type="submit" disabled=${sending}>${sending ? 'Sending…' : 'Send test event'}</button>
      </div>
      <${ErrorBox} error=${error} />
    </form>
    <${SentDelivery} sent=${sent} />`;
}
