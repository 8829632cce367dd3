// The event catalogue: every type Signet emits, with its description, the members of its Data (from the
// JSON Schema in /openapi.json's `webhooks` section) and the example body a delivery of it carries.
import { html } from '../html.js';
import { CopyButton, ErrorBox, Loading } from '../components.js';
import { useCatalogue } from '../catalogue.js';
import { json } from './portal-common.js';

/** A member's type in words: `string (date-time)`, `"paid" | "pending"`, `object of links`. */
function typeOf(schema) {
  if (!schema) return 'any';
  if (schema.enum) return schema.enum.map((v) => JSON.stringify(v)).join(' | ');
  if (schema.type === 'object' && schema.additionalProperties)
    return `object: name → ${typeOf(schema.additionalProperties)}`;
  if (schema.type === 'object' && schema.properties) return `object {${Object.keys(schema.properties).join(', ')}}`;
  return schema.format ? `${schema.type} (${schema.format})` : (schema.type ?? 'any');
}

function DataMembers({ type, schema }) {
  const members = Object.entries(schema?.properties ?? {});
  if (members.length === 0) return html`<p class="hint">No schema is documented for this type's Data.</p>`;
  const required = new Set(schema.required ?? []);
  return html`<div class="table-wrap">
    <table>
      <caption>
        Members of
        <code>Data</code>
        in ${type}${schema.description ? `: ${schema.description}` : ''}
      </caption>
      <thead>
        <tr>
          <th scope="col">Member</th>
          <th scope="col">Type</th>
          <th scope="col">Always present</th>
          <th scope="col">Description</th>
        </tr>
      </thead>
      <tbody>
        ${members.map(
          ([name, member]) =>
            html`<tr key=${name}>
              <th scope="row"><code>${name}</code></th>
              <td>${typeOf(member)}</td>
              <td>${required.has(name) ? 'yes' : 'no'}</td>
              <td>${member.description ?? ''}</td>
            </tr>`,
        )}
      </tbody>
    </table>
  </div>`;
}

const anchor = (type) => `type-${type.replaceAll('.', '-')}`;

/** In-page links: the router (app.js) takes every same-page link, so the jump and the focus move are done here. */
function jumpTo(event, id) {
  event.preventDefault();
  const target = document.getElementById(id);
  target?.scrollIntoView();
  target?.focus();
}

function EventType({ entry }) {
  const id = anchor(entry.type);
  const example = json(entry.example);
  return html`<section class="panel catalogue-type" aria-labelledby=${id}>
    <h2 id=${id} tabindex="-1"><code>${entry.type}</code></h2>
    <p>${entry.summary}</p>
    <${DataMembers} type=${entry.type} schema=${entry.schema} />
    <h3 id=${`${id}-example`}>Example body</h3>
    <pre class="payload" tabindex="0" role="region" aria-labelledby=${`${id}-example`}><code>${example}</code></pre>
    <div class="actions">
      <${CopyButton} text=${example} label=${`Copy the ${entry.type} example`} />
      <a class="button-link" href="/console/portal/test">Send it as a test event</a>
    </div>
  </section>`;
}

export function PortalCataloguePage() {
  const catalogue = useCatalogue();
  if (catalogue.error) return html`<${ErrorBox} error=${catalogue.error} onRetry=${catalogue.retry} />`;
  if (!catalogue.types) return html`<${Loading} label="Loading the event catalogue…" />`;
  return html`<p>
      Every delivery is a JSON body <code>{"Id", "Type", "OccurredAtUtc", "Timestamp", "Data"}</code>; the type decides
      what <code>Data</code> holds. Subscribe an endpoint to the types it needs, or to <code>*</code> for all of them.
    </p>
    <nav aria-label="Event types">
      <ul class="type-index">
        ${catalogue.types.map(
          (t) =>
            html`<li><a href=${`#${anchor(t.type)}`} onClick=${(e) => jumpTo(e, anchor(t.type))}>${t.type}</a></li>`,
        )}
      </ul>
    </nav>
    ${catalogue.types.map((t) => html`<${EventType} key=${t.type} entry=${t} />`)}`;
}
