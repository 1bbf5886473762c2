#!/bin/sh
# mpirun's remote-shell agent for tests/mpi/netns.sh: "HOST command..."
# runs the command in the network namespace WEFT_NETNS_MAP gives HOST
# ("10.1.2.1=nsA,10.1.2.2=nsB"), so that each "host" is a namespace of this
# machine and the ranks talk over a veth pair, by TCP.
host=$1
shift
ns=
for pair in $(echo "$WEFT_NETNS_MAP" | tr ',' ' '); do
  [ "${pair%%=*}" = "$host" ] && ns=${pair#*=}
done
if [ -z "$ns" ]; then
  echo "netns_agent: no namespace for host '$host'" >&2
  exit 1
fi
exec ip netns exec "$ns" sh -c "$*"
