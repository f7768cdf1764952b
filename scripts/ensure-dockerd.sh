#!/bin/sh
# Makes sure a Docker Engine answers on /var/run/docker.sock, for the docker
# tier's tests and demo. Where systemd runs, installing docker.io started it
# already; elsewhere (containers, CI runners, this kind of VM) dockerd is
# started here by hand, with the storage and cgroup drivers that work
# without systemd, and its log in /var/log/agentjail-dockerd.log.
set -eu
alive() { docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }
alive && exit 0
if [ "$(id -u)" -ne 0 ]; then
	echo "agentjail: no Docker Engine answers on /var/run/docker.sock (start dockerd as root)" >&2
	exit 1
fi
command -v dockerd >/dev/null || { echo "agentjail: dockerd is not installed (apt-get install docker.io)" >&2; exit 1; }
echo "agentjail: starting dockerd (log: /var/log/agentjail-dockerd.log)" >&2
nohup dockerd --storage-driver=overlay2 --exec-opt native.cgroupdriver=cgroupfs \
	>/var/log/agentjail-dockerd.log 2>&1 </dev/null &
i=0
while ! alive; do
	i=$((i + 1))
	if [ $i -gt 60 ]; then
		echo "agentjail: dockerd did not answer within 30 s; its log:" >&2
		tail -n 20 /var/log/agentjail-dockerd.log >&2
		exit 1
	fi
	sleep 0.5
done
