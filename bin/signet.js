#!/usr/bin/env node
// The `signet` command. Node 24 runs the TypeScript sources directly (type stripping),
// so there is no build step between a checkout and a running service.
//
// Type stripping and compiling every module again on each start is most of a start's time (`signet
// --help`: several seconds on a slow 2-core machine, a fraction of that with a warm cache). Node's
// on-disk compile cache (https://nodejs.org/api/module.html#module-compile-cache) keeps both, keyed by
// each file's content, so an edited file is compiled afresh. It lives under node_modules/.cache unless
// NODE_COMPILE_CACHE names another directory; NODE_DISABLE_COMPILE_CACHE=1 turns it off. Where the
// directory cannot be written (a read-only image) Node starts without it. The app is imported only
// after the cache is on, so that it covers every module.
import { enableCompileCache } from 'node:module';
import { fileURLToPath } from 'node:url';

// Set in the environment too: enableCompileCache() covers this thread only, and the worker threads (the
// webhook sender, the SQLite checkpoints) read NODE_COMPILE_CACHE. Without it each one loads the type
// stripper again: 28 MB of RSS per thread instead of 18.
process.env.NODE_COMPILE_CACHE ||= fileURLToPath(new URL('../node_modules/.cache/signet-compile', import.meta.url));
enableCompileCache(process.env.NODE_COMPILE_CACHE);
await import('../src/cli/signet.ts');
