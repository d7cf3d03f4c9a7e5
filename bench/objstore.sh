#!/usr/bin/env bash
# bench/objstore.sh [BUILD] [MIB]: a MIB-MiB (default 1024) checkpoint up to
# s3rver on 127.0.0.1 and back, with ebb's client (bench-objstore) and with
# curl doing the same transfers to the same server (presigned URLs), in one
# run. Prints seconds, the ratio ebb/curl and each side's peak RSS. Figures
# only; it fails only when a transfer fails. Needs tests/objstore's
# node_modules (bash .ci/dev test installs them).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
mib=${2:-1024}
work=$(mktemp -d /tmp/ebb-bench-objstore-XXXXXX)
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$work"' EXIT
mkdir "$work/s3"
node "$root/tests/objstore/run_s3rver.js" "$work/s3" bench > "$work/port" &
server=$!
for _ in $(seq 1 100); do grep -qs PORT "$work/port" && break; sleep 0.1; done
port=$(awk '/PORT/ {print $2}' "$work/port")
head -c $((mib << 20)) /dev/urandom > "$work/ckpt.bin"
/usr/bin/time -f "%M" -o "$work/ebb.rss" \
    "$build/bench/bench-objstore" "http://127.0.0.1:$port" bench "$work/ckpt.bin" \
    S3RVER S3RVER > "$work/ebb.out"
cmp "$work/ckpt.bin" "$work/ckpt.bin.ebb"
put_url=$(awk '/^put_url/ {print $2}' "$work/ebb.out")
get_url=$(awk '/^get_url/ {print $2}' "$work/ebb.out")
t0=$(date +%s.%N)
/usr/bin/time -f "%M" -o "$work/curl-put.rss" curl -sSf -o /dev/null -T "$work/ckpt.bin" "$put_url"
t1=$(date +%s.%N)
/usr/bin/time -f "%M" -o "$work/curl-get.rss" curl -sSf -o "$work/ckpt.bin.curl" "$get_url"
t2=$(date +%s.%N)
cmp "$work/ckpt.bin" "$work/ckpt.bin.curl"
python3 - "$work" "$t0" "$t1" "$t2" "$mib" <<'PY'
import sys
work, t0, t1, t2, mib = sys.argv[1], *map(float, sys.argv[2:5]), sys.argv[5]
ebb = dict(l.split(None, 1) for l in open(work + '/ebb.out'))
put, get = float(ebb['ebb_put_s']), float(ebb['ebb_get_s'])
cput, cget = t1 - t0, t2 - t1
rss = lambda f: int(open(work + '/' + f).read().split()[-1])
print('%s MiB to s3rver 3.7.1 on 127.0.0.1 and back' % mib)
print('%-10s %9s %9s %8s' % ('', 'ebb s', 'curl s', 'ebb/curl'))
print('%-10s %9.2f %9.2f %8.2f' % ('upload', put, cput, put / cput))
print('%-10s %9.2f %9.2f %8.2f' % ('download', get, cget, get / cget))
print('peak RSS KiB: ebb %d (whole process), curl put %d, curl get %d'
      % (rss('ebb.rss'), rss('curl-put.rss'), rss('curl-get.rss')))
PY
