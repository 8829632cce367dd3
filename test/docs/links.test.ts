// Every relative link of the README, CONTRIBUTING.md and docs/ leads somewhere: the file exists and, when
// the link names a heading (`page.md#heading`), the page has that heading. The docs are a tree of pages
// that link to each other (docs/README.md is its index), so a moved page or a renamed heading fails here
// instead of leaving a reader at a dead end.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

function pages(): string[] {
  const docs = readdirSync(join(ROOT, 'docs'), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.md'))
    .map((file) => join('docs', file));
  const src = readdirSync(join(ROOT, 'src'), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('README.md'))
    .map((file) => join('src', file));
  return ['README.md', 'CONTRIBUTING.md', ...docs, ...src].filter((file) => existsSync(join(ROOT, file)));
}

/** GitHub's heading anchors: lower case, punctuation dropped but `-` and `_`, spaces become `-`. */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const [, heading] of markdown.replace(/```[\s\S]*?```/g, '').matchAll(/^#{1,6}\s+(.+?)\s*#*$/gm)) {
    const base = heading!
      .toLowerCase()
      .replace(/[`*_]/g, (c) => (c === '_' ? '_' : ''))
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

/** Relative Markdown links `[text](target)`, outside code blocks and inline code. */
function linksOf(markdown: string): string[] {
  const prose = markdown.replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '');
  return [...prose.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)]
    .map((match) => match[1]!)
    .filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target));
}

test('every relative link in the README, CONTRIBUTING.md and docs/ resolves to a file and heading', () => {
  const broken: string[] = [];
  let checked = 0;
  for (const page of pages()) {
    const text = readFileSync(join(ROOT, page), 'utf8');
    for (const link of linksOf(text)) {
      checked += 1;
      const [path = '', anchor] = link.split('#');
      const target = path === '' ? page : normalize(join(dirname(page), decodeURIComponent(path)));
      const full = join(ROOT, target);
      if (!existsSync(full)) {
        broken.push(`${page}: ${link} (no file ${target})`);
        continue;
      }
      if (anchor && statSync(full).isFile() && target.endsWith('.md')) {
        if (!anchorsOf(readFileSync(full, 'utf8')).has(anchor)) broken.push(`${page}: ${link} (no heading #${anchor})`);
      }
    }
  }
  assert.deepEqual(broken, [], `${broken.length} broken of ${checked} links:\n${broken.join('\n')}`);
  assert.ok(checked > 50, `only ${checked} links found: the link pattern no longer matches the docs`);
});

test('the anchor rule matches GitHub on the headings these docs use', () => {
  const anchors = anchorsOf(
    '# The audit trail\n## `signet audit verify`\n### Roles, scopes & portals\n## Roles, scopes & portals',
  );
  assert.deepEqual(
    [...anchors],
    ['the-audit-trail', 'signet-audit-verify', 'roles-scopes--portals', 'roles-scopes--portals-1'],
  );
});
