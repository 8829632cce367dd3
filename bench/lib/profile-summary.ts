// Summarises V8 CPU profiles (.cpuprofile, from BENCH_PROFILE=1 or `node --cpu-prof`) as time per request:
//   npx node bench/lib/profile-summary.ts bench/profiles/<run> [--top 25]
//   npx node bench/lib/profile-summary.ts some.cpuprofile --requests 123456
//   … --match 'helmet|cors|under-pressure'   (inclusive time of the matching functions, e.g. plugin hooks)
// For each profile: the busiest functions by self time, self time per package or source file (native
// frames such as JSON.parse or crypto are charged to the nearest JavaScript caller that has a file), and
// inclusive time of the service's own functions. The request count comes from the <label>.meta.json that
// bench/run.ts writes next to each profile, or from --requests.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

const args = process.argv.slice(2);
const option = (name: string): string | undefined => {
  const i = args.indexOf(name);
  if (i < 0) return undefined;
  const value = args[i + 1];
  args.splice(i, 2);
  return value;
};
const TOP = Number(option('--top') ?? 25);
const REQUESTS = option('--requests');
/** Extra section: inclusive time of the functions whose "name  owner:line" matches this pattern. */
const MATCH = option('--match');

const files = args.flatMap((arg) =>
  statSync(arg).isDirectory()
    ? readdirSync(arg)
        .filter((f) => f.endsWith('.cpuprofile'))
        .sort()
        .map((f) => join(arg, f))
    : [arg],
);
if (files.length === 0) {
  console.error('usage: profile-summary.ts <dir|file.cpuprofile>… [--top N] [--requests N]');
  process.exit(2);
}

const SPECIAL = new Set(['(idle)', '(program)', '(garbage collector)', '(root)']);

/** Package or file a frame belongs to: "fastify", "@fastify/rate-limit", "src/http/bearer/auth.ts", "node:internal/…". */
function ownerOf(frame: CallFrame): string | undefined {
  const { url, functionName } = frame;
  if (SPECIAL.has(functionName) && !url) return functionName;
  if (!url) return undefined;
  const nm = url.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const parts = url.slice(nm + '/node_modules/'.length).split('/');
    return parts[0]!.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0];
  }
  const src = url.search(/\/(src|bench|test)\//);
  if (src >= 0) return url.slice(src + 1);
  if (url.startsWith('node:'))
    return url
      .replace(/^node:internal\/(deps\/)?/, 'node:')
      .replace(/\/[^/]*$/, (m) => m)
      .split('/')
      .slice(0, 2)
      .join('/');
  return url.replace(/^file:\/\//, '');
}

function frameKey(frame: CallFrame): string {
  const where = frame.url ? `${ownerOf(frame)}:${frame.lineNumber + 1}` : '(native)';
  return `${frame.functionName || '(anonymous)'}  ${where}`;
}

function summarise(file: string): void {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const metaFile = file.replace(/\.cpuprofile$/, '.meta.json');
  const meta = existsSync(metaFile)
    ? (JSON.parse(readFileSync(metaFile, 'utf8')) as { requests: number; label?: string; scenario?: string })
    : undefined;
  const requests = Number(REQUESTS ?? meta?.requests ?? 0);

  const byId = new Map<number, ProfileNode>();
  const parent = new Map<number, number>();
  for (const node of profile.nodes) {
    byId.set(node.id, node);
    for (const child of node.children ?? []) parent.set(child, node.id);
  }
  // Sample i lasts until sample i+1 (DevTools' convention); the last one gets the average.
  const n = profile.samples.length;
  const durations = profile.samples.map((_, i) =>
    i + 1 < n ? profile.timeDeltas[i + 1]! : (profile.endTime - profile.startTime) / n,
  );

  const self = new Map<string, number>();
  const owners = new Map<string, number>();
  const inclusive = new Map<string, number>();
  const ownerInclusive = new Map<string, number>();
  let total = 0;
  let idle = 0;
  for (let i = 0; i < n; i++) {
    const us = durations[i]!;
    total += us;
    const leaf = byId.get(profile.samples[i]!)!;
    if (leaf.callFrame.functionName === '(idle)') {
      idle += us;
      continue;
    }
    const key = frameKey(leaf.callFrame);
    self.set(key, (self.get(key) ?? 0) + us);
    // Charge native frames to the nearest ancestor with an owner.
    let id: number | undefined = leaf.id;
    let owner: string | undefined;
    const seen = new Set<string>();
    const seenOwners = new Set<string>();
    while (id !== undefined) {
      const frame = byId.get(id)!.callFrame;
      const o = ownerOf(frame);
      owner ??= o;
      if (frame.url) {
        const k = frameKey(frame);
        if (!seen.has(k)) {
          seen.add(k);
          inclusive.set(k, (inclusive.get(k) ?? 0) + us);
        }
        if (o && !seenOwners.has(o)) {
          seenOwners.add(o);
          ownerInclusive.set(o, (ownerInclusive.get(o) ?? 0) + us);
        }
      }
      id = parent.get(id);
    }
    owner ??= '(native, no JS caller)';
    owners.set(owner, (owners.get(owner) ?? 0) + us);
  }

  const busy = total - idle;
  const per = (us: number) => (requests > 0 ? `${(us / requests).toFixed(2).padStart(7)} µs/req` : '');
  const pct = (us: number) => `${((us / busy) * 100).toFixed(1).padStart(5)}%`;
  const top = (map: Map<string, number>, filter: (k: string) => boolean = () => true) =>
    [...map.entries()]
      .filter(([k]) => filter(k))
      .sort((a, b) => b[1] - a[1])
      .slice(0, TOP);

  console.log(`\n=== ${meta?.scenario ?? basename(file)}${meta?.label ? ` — ${meta.label}` : ''}`);
  console.log(
    `window ${(total / 1e6).toFixed(1)} s, busy ${((busy / total) * 100).toFixed(0)}%, ${requests || '?'} requests${requests ? `, busy ${(busy / requests).toFixed(1)} µs/req` : ''}`,
  );
  console.log(`\n-- self time by function (top ${TOP})`);
  for (const [k, us] of top(self)) console.log(`${per(us)} ${pct(us)}  ${k}`);
  console.log('\n-- self time by package / file (native frames charged to their JS caller)');
  for (const [k, us] of top(owners)) console.log(`${per(us)} ${pct(us)}  ${k}`);
  console.log('\n-- inclusive time by package / file (stack contains it)');
  for (const [k, us] of top(ownerInclusive, (k) => !k.startsWith('node:'))) console.log(`${per(us)} ${pct(us)}  ${k}`);
  console.log('\n-- inclusive time of src/ functions');
  for (const [k, us] of top(inclusive, (k) => /\ssrc\//.test(k))) console.log(`${per(us)} ${pct(us)}  ${k}`);
  if (MATCH) {
    const pattern = new RegExp(MATCH);
    console.log(`\n-- inclusive time of functions matching /${MATCH}/`);
    for (const [k, us] of top(inclusive, (k) => pattern.test(k))) console.log(`${per(us)} ${pct(us)}  ${k}`);
  }
}

interface HeapNode {
  callFrame: CallFrame;
  selfSize: number;
  children: HeapNode[];
}

/** Allocation sampling (BENCH_HEAP_PROFILE=1): bytes allocated per request, by function and by owner. */
function summariseHeap(file: string, requests: number): void {
  const { head } = JSON.parse(readFileSync(file, 'utf8')) as { head: HeapNode };
  const self = new Map<string, number>();
  const owners = new Map<string, number>();
  let total = 0;
  const walk = (node: HeapNode, owner: string | undefined) => {
    const own = ownerOf(node.callFrame);
    const effective = node.callFrame.url ? own : owner;
    if (node.selfSize > 0) {
      total += node.selfSize;
      const key = frameKey(node.callFrame);
      self.set(key, (self.get(key) ?? 0) + node.selfSize);
      const o = effective ?? '(no JS caller)';
      owners.set(o, (owners.get(o) ?? 0) + node.selfSize);
    }
    for (const child of node.children) walk(child, effective);
  };
  walk(head, undefined);
  const per = (bytes: number) => `${(bytes / requests).toFixed(0).padStart(7)} B/req`;
  const pct = (bytes: number) => `${((bytes / total) * 100).toFixed(1).padStart(5)}%`;
  console.log(
    `\n-- allocations (sampled, incl. objects already collected): ${(total / requests / 1024).toFixed(1)} KiB/req`,
  );
  console.log('   by package / file (native allocations charged to their JS caller):');
  for (const [k, b] of [...owners].sort((a, c) => c[1] - a[1]).slice(0, TOP)) console.log(`${per(b)} ${pct(b)}  ${k}`);
  console.log('   by function:');
  for (const [k, b] of [...self].sort((a, c) => c[1] - a[1]).slice(0, TOP)) console.log(`${per(b)} ${pct(b)}  ${k}`);
}

for (const file of files) {
  summarise(file);
  const heap = file.replace(/\.cpuprofile$/, '.heapprofile');
  const metaFile = file.replace(/\.cpuprofile$/, '.meta.json');
  const requests = Number(
    REQUESTS ??
      (existsSync(metaFile) ? (JSON.parse(readFileSync(metaFile, 'utf8')) as { requests: number }).requests : 0),
  );
  if (existsSync(heap) && requests > 0) summariseHeap(heap, requests);
}
