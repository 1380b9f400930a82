#!/usr/bin/env bash
# man.sh — write docs/man/<tool>.1 for every tool, from its urfave/cli
# application (App.ToMan). The tests fail when a page is stale.
#
#   scripts/man.sh           write the pages
#   man -l docs/man/lockd.1  read one
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
UPDATE_MAN=1 go test -count=1 -run '^TestManPage$' ./cmd/... >/dev/null
ls docs/man
