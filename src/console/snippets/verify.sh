#!/usr/bin/env bash
# Verify one Signet webhook delivery with bash, openssl and coreutils (the Standard Webhooks headers).
#
#   WEBHOOK_SECRET=whsec_…             your endpoint's secret
#   WEBHOOK_ID=dlv_…                   the webhook-id header
#   WEBHOOK_TIMESTAMP=1795300000       the webhook-timestamp header (seconds since the epoch)
#   WEBHOOK_SIGNATURE='v1,… v1,…'      the webhook-signature header
#   bash verify.sh < body.json         the raw body, byte for byte, on stdin
#
# Prints "verified" and exits 0, or prints the reason on stderr and exits 1.
# Note: openssl takes the key as an argument, so it shows in the process list while openssl runs;
# on a shared machine, prefer the Node snippets.
set -euo pipefail
fail() { echo "not verified: $1" >&2; exit 1; }
[[ -n "${WEBHOOK_SECRET:-}" ]] || fail "WEBHOOK_SECRET is not set"
[[ "${WEBHOOK_TIMESTAMP:-}" =~ ^[0-9]+$ ]] || fail "webhook-timestamp is missing or not a number"

# The timestamp is signed with the body: an old delivery replayed later is refused here (5 minutes).
age=$(( $(date +%s) - 10#$WEBHOOK_TIMESTAMP ))
(( age <= 300 && age >= -300 )) || fail "timestamp outside the 5-minute tolerance"

# The key is the base64 part of the secret, decoded; the signed content is "<id>.<timestamp>.<body>",
# with the body's exact bytes streamed from stdin (never re-serialized).
key_hex=$(printf '%s' "${WEBHOOK_SECRET#whsec_}" | base64 -d | od -An -vtx1 | tr -d ' \n')
expected=$({ printf '%s.%s.' "${WEBHOOK_ID:-}" "$WEBHOOK_TIMESTAMP"; cat; } |
  openssl dgst -sha256 -mac HMAC -macopt "hexkey:$key_hex" -binary | base64 -w0)

# During a secret rotation the header carries one "v1,<base64>" per active secret: any may match.
# Comparing hashes of both sides keeps the string comparison from leaking how much of it matched.
digest() { printf '%s' "$1" | sha256sum; }
for entry in ${WEBHOOK_SIGNATURE:-}; do
  if [[ "$entry" == v1,* && "$(digest "${entry#v1,}")" == "$(digest "$expected")" ]]; then
    echo verified
    exit 0
  fi
done
fail "no signature matches"
