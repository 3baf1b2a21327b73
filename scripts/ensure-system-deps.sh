#!/usr/bin/env bash
# Installs what the project needs beyond Python packages:
# - redis-server: the cache tests and the Redis cache benchmark start their own private instance
#   on a free loopback port;
# - nginx (with HTTP/2): tests/interop/test_nginx.py starts its own instance, with its own
#   config and certificates, in front of the reference server;
# - tesseract-ocr (English data): tests/preprocess/test_text_images.py reads prepared
#   screenshots, charts and scanned pages back with it (through pytesseract);
# - tinyproxy: tests/interop/test_proxy.py starts its own instances (a forward proxy, one that
#   wants credentials, one that refuses tunnels) on free loopback ports.
# - valgrind: `python -m benchmarks.client_overhead --instructions` counts instructions per call
#   under callgrind (tests/bench/test_client_overhead.py runs it).
# - chromium: tests/bench/test_report_browser.py opens the benchmark's HTML report in headless
#   Chromium and checks what a person sees there (headline, intervals).
# - nftables (Linux): tests/client/test_nat.py drops the packets of flows a forgetful NAT lost,
#   inside a network namespace of its own (skipped without root).
# No package's system service is used.
set -euo pipefail
missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
command -v nginx >/dev/null 2>&1 || missing+=(nginx)
command -v tinyproxy >/dev/null 2>&1 || missing+=(tinyproxy)
command -v valgrind >/dev/null 2>&1 || missing+=(valgrind)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v tesseract >/dev/null 2>&1 || missing+=(tesseract-ocr tesseract-ocr-eng)
if [ "$(uname -s)" = "Linux" ]; then
  command -v nft >/dev/null 2>&1 || missing+=(nftables)
fi
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing ${missing[*]} (apt)..." >&2
  export DEBIAN_FRONTEND=noninteractive
  # Another set-up running beside this one (a second checkout, CI) holds dpkg's lock: wait for it.
  apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null
  apt-get -o DPkg::Lock::Timeout=600 install -y -qq "${missing[@]}" >/dev/null
  # The packages may start system instances (:6379, :80, :8888); the project never uses them.
  exit 0
fi
echo "${missing[*]} not installed and cannot be installed automatically (not root or no apt)." >&2
echo "Install them (e.g. 'sudo apt-get install ${missing[*]}' or 'brew install redis nginx tinyproxy') and rerun." >&2
exit 1
