// Verify deliveries: the three snippets (GET /console/snippets.json, the files of src/console/snippets/
// verbatim, each run against a real signed delivery by the tests), each with a copy button and how to run it.
import { html, useEffect, useState } from '../html.js';
import { CopyButton, ErrorBox, Loading } from '../components.js';

/** One line each on how to run it; the snippet's own comment says where each value comes from. */
const HOW_TO_RUN = {
  'node-receiver': html`In a project with Signet's receiver kit (<code>signet/receiver</code>):
    <code>WEBHOOK_SECRET=whsec_… WEBHOOK_SIGNATURE_256='sha256=…' node node-receiver.mjs &lt; body.json</code>`,
  'node-crypto': html`Node.js 18 or later, nothing to install:
    <code
      >WEBHOOK_SECRET=whsec_… WEBHOOK_ID=dlv_… WEBHOOK_TIMESTAMP=… WEBHOOK_SIGNATURE='v1,…' node node-crypto.mjs &lt;
      body.json</code
    >`,
  shell: html`bash with openssl and coreutils:
    <code
      >WEBHOOK_SECRET=whsec_… WEBHOOK_ID=dlv_… WEBHOOK_TIMESTAMP=… WEBHOOK_SIGNATURE='v1,…' bash verify.sh &lt;
      body.json</code
    >`,
};

async function readSnippets() {
  const response = await fetch('/console/snippets.json', { headers: { accept: 'application/json' } });
  if (!response.ok) throw new Error(`The snippets could not be read (HTTP ${response.status}).`);
  return (await response.json()).Items;
}

function Snippet({ snippet }) {
  const id = `snippet-${snippet.Id}`;
  return html`<section class="panel snippet" aria-labelledby=${id}>
    <h2 id=${id}>${snippet.Title}</h2>
    <p class="run">${HOW_TO_RUN[snippet.Id] ?? html`Save it as <code>${snippet.FileName}</code> and run it.`}</p>
    <div class="actions"><${CopyButton} text=${snippet.Source} label=${`Copy ${snippet.FileName}`} /></div>
    <pre
      class="snippet-source"
      tabindex="0"
      role="region"
      aria-label=${snippet.FileName}
    ><code class=${`language-${snippet.Language}`}>${snippet.Source}</code></pre>
  </section>`;
}

export function PortalVerifyPage() {
  const [state, setState] = useState({ loading: true });
  const load = () => {
    setState({ loading: true });
    readSnippets().then(
      (snippets) => setState({ snippets }),
      (error) => setState({ error }),
    );
  };
  useEffect(load, []);
  if (state.loading) return html`<${Loading} label="Loading the snippets…" />`;
  if (state.error) return html`<${ErrorBox} error=${state.error} onRetry=${load} />`;
  return html`<p>
      Every delivery is signed with your endpoint's secret. Check the signature over the raw body, byte for byte, before
      you trust it. Each snippet prints <code>verified</code> and exits 0 for a genuine, fresh delivery, or prints the
      reason and exits 1. Each is tested by running it against a real delivery.
    </p>
    ${state.snippets.map((s) => html`<${Snippet} key=${s.Id} snippet=${s} />`)}`;
}
