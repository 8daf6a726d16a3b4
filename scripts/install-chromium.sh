#!/usr/bin/env bash
# Make sure Debian's headless chromium is present for the browser tests (tests/site).
# Playwright's own browser download does not work on these machines, so the tests drive
# /usr/bin/chromium-headless-shell (Debian's package of the same name). As root this installs it;
# otherwise it prints how, and exits 0 so that `make setup` still finishes (the browser tests then
# skip locally and fail in CI).
set -euo pipefail

if command -v chromium-headless-shell >/dev/null 2>&1; then
    exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "Installing Debian's chromium-headless-shell for the browser tests..."
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium-headless-shell >/dev/null
    echo "chromium-headless-shell installed: $(command -v chromium-headless-shell)"
else
    echo "NOTE: chromium-headless-shell is missing; the browser tests need it. Install it with:" >&2
    echo "    sudo apt-get update && sudo apt-get install -y chromium-headless-shell" >&2
fi
