#!/usr/bin/env node
// The `signet` command. Node 24 runs the TypeScript sources directly (type stripping),
// so there is no build step between a checkout and a running service.
import '../src/cli/signet.ts';
