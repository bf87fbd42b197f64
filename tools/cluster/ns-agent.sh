#!/bin/sh
# mpirun's launch agent (plm_rsh_agent) when the hosts are network
# namespaces of this machine (accio cluster --ns-hosts): "ns-agent.sh HOST
# COMMAND..." runs COMMAND inside the namespace that has HOST's address,
# as ssh would on HOST. ACCIO_NS_MAP names a file of "ADDRESS NAMESPACE".
while [ "${1#-}" != "$1" ]; do shift; done
host=$1
shift
ns=$(awk -v h="$host" '$1 == h { print $2 }' "${ACCIO_NS_MAP:?}")
if [ -z "$ns" ]; then
	echo "ns-agent: no namespace has the address $host" >&2
	exit 255
fi
exec ip netns exec "$ns" /bin/sh -c "$*"
