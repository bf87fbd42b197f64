#!/bin/sh
# accio-nic-uio.sh [uio|kernel]: hand the Accio NIC to user space (accio-nic-uio,
# for DPDK's net_accio; the default) or give it back to the kernel's netdev
# driver (accio-nic). Prints the UIO device (uio) or the interface (kernel).
set -e
want=${1:-uio}
dev=
for d in /sys/bus/platform/devices/*; do
	if grep -qs 'accio,nic' "$d/of_node/compatible"; then dev=$d; break; fi
done
[ -n "$dev" ] || { echo "accio-nic-uio: no Accio NIC on the platform bus" >&2; exit 1; }
name=$(basename "$dev")
case "$want" in
uio) drv=accio-nic-uio ;;
kernel) drv=accio-nic ;;
*) echo "usage: accio-nic-uio.sh [uio|kernel]" >&2; exit 2 ;;
esac
[ -d "/sys/bus/platform/drivers/$drv" ] || { echo "accio-nic-uio: the kernel has no $drv driver" >&2; exit 1; }
if [ "$(basename "$(readlink "$dev/driver" 2>/dev/null)")" != "$drv" ]; then
	[ -e "$dev/driver" ] && echo "$name" > "$dev/driver/unbind"
	echo "$drv" > "$dev/driver_override"
	echo "$name" > "/sys/bus/platform/drivers/$drv/bind"
fi
if [ "$want" = uio ]; then
	for u in "$dev"/uio/uio*; do [ -e "$u" ] && echo "/dev/$(basename "$u")"; done
else
	echo > "$dev/driver_override"
	ls "$dev/net"
fi
