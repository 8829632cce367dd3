// BENCH_SQLITE_TIMING=<dir>: the wall time node:sqlite spends in each SQL text during a measured window,
// written to <dir>/<label>.sqlite.txt. A CPU profile shows SQLite as a few native frames; this names the
// statements they ran and what each costs per call and per request (docs/benchmarks-history.md, "Where a create's
// SQLite time goes"). Node's calls are synchronous, so wall time here is this thread's time.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import sqlite from 'node:sqlite';

interface Spent {
  calls: number;
  ns: bigint;
  /** The longest single call: what one statement held the event loop for. */
  maxNs: bigint;
}

export interface SqliteTiming {
  reset(): void;
  /** Writes the window's table (statements by total time) and returns its path. */
  write(label: string, requests: number): string;
}

const TIMED_STATEMENT_METHODS = ['run', 'get', 'all', 'iterate'] as const;

let installed: SqliteTiming | undefined;

/** Patches node:sqlite once per process (bench/scale/scale.ts and bench/lib/child-control.ts both ask for it). */
export function installSqliteTiming(dir: string): SqliteTiming {
  return (installed ??= install(dir));
}

function install(dir: string): SqliteTiming {
  let spent = new Map<string, Spent>();
  const add = (sqlText: string, started: bigint) => {
    const entry = spent.get(sqlText) ?? { calls: 0, ns: 0n, maxNs: 0n };
    const ns = process.hrtime.bigint() - started;
    entry.calls++;
    entry.ns += ns;
    if (ns > entry.maxNs) entry.maxNs = ns;
    spent.set(sqlText, entry);
  };
  const statement = sqlite.StatementSync.prototype as unknown as Record<string, (...args: unknown[]) => unknown>;
  for (const method of TIMED_STATEMENT_METHODS) {
    const original = statement[method]!;
    statement[method] = function (this: sqlite.StatementSync, ...args: unknown[]) {
      const started = process.hrtime.bigint();
      try {
        return original.apply(this, args);
      } finally {
        add(this.sourceSQL, started);
      }
    };
  }
  const database = sqlite.DatabaseSync.prototype;
  const exec = database.exec;
  database.exec = function (this: sqlite.DatabaseSync, sqlText: string) {
    const started = process.hrtime.bigint();
    try {
      return exec.call(this, sqlText);
    } finally {
      add(`exec: ${sqlText}`, started);
    }
  };
  return {
    reset: () => {
      spent = new Map();
    },
    write: (label, requests) => {
      mkdirSync(dir, { recursive: true });
      const file = join(dir, `${label.replace(/[^\w.-]+/g, '_')}.sqlite.txt`);
      writeFileSync(file, table(spent, requests));
      return file;
    },
  };
}

function table(spent: Map<string, Spent>, requests: number): string {
  const rows = [...spent].sort(([, a], [, b]) => Number(b.ns - a.ns));
  const total = rows.reduce((sum, [, s]) => sum + Number(s.ns), 0);
  const lines = rows.map(([sqlText, s]) => {
    const ns = Number(s.ns);
    const cells = [
      (ns / 1e6).toFixed(0).padStart(8),
      String(s.calls).padStart(8),
      (ns / s.calls / 1e3).toFixed(1).padStart(9),
      (requests > 0 ? ns / requests / 1e3 : NaN).toFixed(1).padStart(9),
      (Number(s.maxNs) / 1e3).toFixed(0).padStart(9),
    ];
    return `${cells.join(' ')}  ${sqlText.replace(/\s+/g, ' ').slice(0, 200)}`;
  });
  const perRequest = requests > 0 ? (total / requests / 1e3).toFixed(1) : 'n/a';
  return [
    `${requests} requests; SQLite ${(total / 1e6).toFixed(0)} ms in all, ${perRequest} µs per request`,
    `${'ms'.padStart(8)} ${'calls'.padStart(8)} ${'µs/call'.padStart(9)} ${'µs/req'.padStart(9)} ${'max µs'.padStart(9)}  SQL`,
    ...lines,
    '',
  ].join('\n');
}
