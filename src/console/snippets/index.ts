// The copy-paste snippets that verify a webhook delivery (the portal's "verify a delivery" page,
// docs/guides/portal.md). Read once at start from the files beside this one, which test/console/snippets.test.ts runs
// against a real signed delivery: the page shows exactly the code that was tested.
import { readFileSync } from 'node:fs';

export interface Snippet {
  /** Stable id for the page (a tab or an anchor). */
  id: 'node-receiver' | 'node-crypto' | 'shell';
  title: string;
  /** For syntax classes: `javascript` or `bash`. */
  language: 'javascript' | 'bash';
  fileName: string;
  /** The file's text, verbatim. */
  source: string;
}

function read(fileName: string): string {
  return readFileSync(new URL(`./${fileName}`, import.meta.url), 'utf8');
}

export const SNIPPETS: readonly Snippet[] = Object.freeze(
  [
    {
      id: 'node-receiver',
      title: 'Node.js with signet/receiver',
      language: 'javascript',
      fileName: 'node-receiver.mjs',
    },
    { id: 'node-crypto', title: 'Node.js with node:crypto only', language: 'javascript', fileName: 'node-crypto.mjs' },
    { id: 'shell', title: 'Shell with openssl', language: 'bash', fileName: 'verify.sh' },
  ].map((s) => Object.freeze({ ...s, source: read(s.fileName) }) as Snippet),
);
