// The event catalogue: every event type Signet emits, from the `webhooks` section of the public
// /openapi.json (written once in src/webhooks/outbox/events.examples.ts). Read once per page load and
// shared by the operator pages (type filters) and the integrator portal (catalogue, test events).
import { useEffect, useState } from './html.js';

let openApi;
let catalogue;

/** The public OpenAPI document, read once per page load; a failure lets a later page try again. */
function readOpenApi() {
  openApi ??= fetch('/openapi.json', { headers: { accept: 'application/json' }, credentials: 'same-origin' })
    .then((response) => {
      if (!response.ok)
        throw new Error(`The API description (/openapi.json) could not be read (HTTP ${response.status}).`);
      return response.json();
    })
    .catch((error) => {
      openApi = undefined;
      throw error;
    });
  return openApi;
}

/** The OpenAPI document's event types: [{ type, summary, schema (of Data), example (a whole body) }]. */
function readCatalogue() {
  catalogue ??= readOpenApi()
    .then((doc) =>
      Object.entries(doc.webhooks ?? {}).map(([type, item]) => {
        const body = item.post?.requestBody?.content?.['application/json'] ?? {};
        return {
          type,
          summary: item.post?.summary ?? '',
          schema: body.schema?.properties?.Data,
          example: body.example,
        };
      }),
    )
    .catch((error) => {
      catalogue = undefined; // a later page may try again
      throw error;
    });
  return catalogue;
}

/** A schema's allowed values: its `enum`, or those of each `anyOf` branch (how TypeBox writes a union of literals). */
function valuesOf(schema) {
  return schema?.enum ?? (schema?.anyOf ?? []).flatMap(valuesOf);
}

/** The audit actions GET /api/admin/audit documents for its `action` filter (src/audit/audit.ts, written once). */
function readAuditActions() {
  return readOpenApi().then((doc) =>
    valuesOf(doc.paths?.['/api/admin/audit']?.get?.parameters?.find((p) => p.name === 'action')?.schema),
  );
}

/** `{ value }` once `read()` resolves, `{ error }` if it fails, `{}` meanwhile; `retry()`. */
function useRead(read) {
  const [state, setState] = useState({});
  const load = () => {
    let live = true;
    setState({});
    read().then(
      (value) => live && setState({ value }),
      (error) => live && setState({ error }),
    );
    return () => {
      live = false;
    };
  };
  useEffect(load, []);
  return { ...state, retry: load };
}

/** `{ actions }` once read, `{ error }`, or `{}` meanwhile. */
export function useAuditActions() {
  const { value, ...rest } = useRead(readAuditActions);
  return { actions: value, ...rest };
}

/** `{ types }` once the catalogue is read, `{ error }` if it cannot be, `{}` meanwhile; `retry()`. */
export function useCatalogue() {
  const { value, ...rest } = useRead(readCatalogue);
  return { types: value, ...rest };
}
