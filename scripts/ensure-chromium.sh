#!/bin/sh
# Install Debian's headless Chromium for the browser tests when it is missing and we can.
# Never fatal: without it the browser tests skip with a reason.
command -v chromium >/dev/null 2>&1 && exit 0
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing chromium for the browser tests (apt-get)..."
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/dev/null 2>&1 \
    && exit 0
fi
echo "chromium not installed: browser tests will be skipped"
exit 0
