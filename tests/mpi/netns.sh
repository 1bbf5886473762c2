#!/bin/sh
# Two "hosts" on one machine: two network namespaces joined by a veth pair,
# one MPI rank in each, talking by TCP (Open MPI's tcp transport only, on
# the veth's subnet; no shared memory).  Runs the cluster-session and
# collective tests across them.  TAP; skipped, with the reason, where the
# machine does not allow namespaces (not root, no `ip`, no Open MPI).
#   netns.sh MPIRUN TEST_PARTITION TEST_COLLECTIVES
mpirun=$1 partition=$2 collectives=$3
here=$(cd "$(dirname "$0")" && pwd)
skip() { echo "1..0 # SKIP skipped: $1"; exit 0; }
[ -n "$mpirun" ] && [ -x "$mpirun" ] || skip "Open MPI (mpirun) is not installed"
[ "$(id -u)" = 0 ] || skip "network namespaces need root"
command -v ip >/dev/null || skip "no ip(8) (iproute2)"
a=weft-a-$$ b=weft-b-$$ va=wva$$ vb=wvb$$
cleanup() { ip netns del "$a" 2>/dev/null; ip netns del "$b" 2>/dev/null; }
trap cleanup EXIT INT TERM
ip netns add "$a" 2>/dev/null || skip "this machine does not allow 'ip netns add'"
ip netns add "$b" &&
  ip link add "$va" type veth peer name "$vb" &&
  ip link set "$va" netns "$a" && ip link set "$vb" netns "$b" &&
  ip -n "$a" addr add 10.213.77.1/24 dev "$va" &&
  ip -n "$b" addr add 10.213.77.2/24 dev "$vb" &&
  ip -n "$a" link set "$va" up && ip -n "$b" link set "$vb" up &&
  ip -n "$a" link set lo up && ip -n "$b" link set lo up ||
  skip "could not join two namespaces by a veth pair"
export WEFT_NETNS_MAP="10.213.77.1=$a,10.213.77.2=$b"
run() {
  ip netns exec "$a" "$mpirun" --allow-run-as-root --oversubscribe -np 2 \
    --host 10.213.77.1,10.213.77.2 --mca plm_rsh_agent "$here/netns_agent.sh" \
    --mca btl tcp,self --mca btl_tcp_if_include 10.213.77.0/24 \
    --mca oob_tcp_if_include 10.213.77.0/24 \
    -x WEFT_PLUGIN_PATH -x WEFT_MPI_MODULE -x WEFT_NETNS_MAP \
    "$@"
}
echo "1..3"
# The two ranks are in different namespaces, each with only its veth.
spaces=$(run sh -c 'readlink /proc/self/ns/net' 2>&1 | sort -u | grep -c '^net:')
if [ "$spaces" = 2 ]; then
  echo "ok 1 - the two ranks run in two network namespaces"
else
  echo "not ok 1 - the two ranks run in two network namespaces"
  echo "# saw $spaces distinct namespaces"
fi
n=2
for prog in "$partition" "$collectives"; do
  out=$(run "$prog" 2 2>&1)
  rc=$?
  name=$(basename "$prog")
  if [ $rc -eq 0 ] && echo "$out" | grep -q '^1\.\.' &&
     ! echo "$out" | grep -q '^not ok'; then
    echo "ok $n - $name across two namespaces, by TCP"
  else
    echo "not ok $n - $name across two namespaces, by TCP"
    echo "$out" | sed 's/^/# /' | tail -30
  fi
  n=$((n + 1))
done
