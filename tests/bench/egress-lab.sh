#!/bin/bash
# tests/bench/egress-lab.sh: where an egress download's time goes; run in the guest
# (tests/vm/run.sh tests/bench/egress-lab.sh) after make build fixtures. Lab notes:
# docs/dev/performance.md §10.
set -u
cd "$(dirname "$0")/../.."
T=build/fixtures/egresstool
ip link add maka-x0 type dummy; ip addr add 192.0.2.20/32 dev maka-x0; ip link set maka-x0 up
$T serve 192.0.2.20 >/tmp/serve.log 2>&1 &
sleep 1
URL="http://192.0.2.20/?bytes=104857600"
w=$(mktemp -d /tmp/egx.XXXX); chmod 711 $w
cp -a build/fixtures/rootfs $w/rootfs; install -m755 $T $w/rootfs/usr/bin/egresstool
cp maka $w/maka
mkdir $w/b; (cd $w/b && $w/maka spec >/dev/null)
jq --arg r $w/rootfs '.root={path:$r,readonly:true} | .process.terminal=false | .process.args=["sleep","1000"] | .annotations["org.maka.egress"]="[\"192.0.2.20:80\"]"' $w/b/config.json > $w/b/c && mv $w/b/c $w/b/config.json
echo '{"profile":"restricted","egress":["192.0.2.20:80"]}' > $w/pol.json
export MAKA_POLICY=$w/pol.json
M="$w/maka --root $w/state --state-dir $w/sd"
$M run -d -b $w/b x1 || exit 1
pid=$($M state x1 | jq .pid)
trap '$M delete -f x1 >/dev/null 2>&1; ip link del maka-x0' EXIT
for i in 1 2; do
echo "direct:        $($T get - $URL)"
echo "nsenter net:   $(nsenter --net=/proc/$pid/ns/net $T get 127.0.0.1:3128 $URL)"
echo "maka exec:     $($M exec x1 egresstool get 127.0.0.1:3128 $URL)"
socat TCP-LISTEN:8081,reuseaddr,fork TCP:192.0.2.20:80 & sp=$!
for j in $(seq 50); do { : < /dev/tcp/127.0.0.1/8081; } 2>/dev/null && break; sleep 0.1; done
echo "socat direct:  $($T get - http://127.0.0.1:8081/?bytes=104857600)"
kill $sp
done
