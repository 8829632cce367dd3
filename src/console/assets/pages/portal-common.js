// What the integrator portal's pages share: the client's endpoints (GET /api/webhooks, as the portal's one
// client), an endpoint picker, pretty JSON and the link to one delivery.
import { html, useEffect, useState } from '../html.js';
import { api, enc } from '../api.js';
import { Field } from '../components.js';

/** `{ loading }`, `{ endpoints }` or `{ error }`, plus `reload()`. */
export function useEndpoints() {
  const [state, setState] = useState({ loading: true });
  const load = async () => {
    setState({ loading: true });
    try {
      setState({ endpoints: (await api('/webhooks')).Items });
    } catch (error) {
      setState({ error });
    }
  };
  useEffect(() => {
    load();
  }, []);
  return { ...state, reload: load };
}

/** A <select> of the client's endpoints (URL and id), with a first "choose" option when `value` is empty. */
export function EndpointPicker({ endpoints, value, onInput, label = 'Endpoint' }) {
  const options = [
    ...(value ? [] : [{ value: '', label: 'Choose an endpoint…' }]),
    ...endpoints.map((e) => ({
      value: e.Id,
      label: `${e.Url}${e.Description ? ` (${e.Description})` : ''}${e.Enabled ? '' : ' — disabled'}`,
    })),
  ];
  return html`<${Field} label=${label} type="select" value=${value} onInput=${onInput} options=${options} />`;
}

/** Pretty JSON for a <pre>. */
export const json = (value) => JSON.stringify(value, null, 2);

/** The portal's link to one delivery: the Deliveries page, on its endpoint, with the delivery open. */
export function deliveryHref(delivery) {
  return `/console/portal/deliveries?endpoint_id=${enc(delivery.EndpointId)}&delivery_id=${enc(delivery.Id)}`;
}
