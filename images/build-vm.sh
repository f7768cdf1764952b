#!/bin/sh
# Builds what the microvm tier boots from an image made by `agentjail image
# build`: a kernel, an initramfs holding the guest agent, and the image's
# own root as a read-only disk, so the guest runs the image's own userland
# (its shell, coreutils, CA certificates, Python and packages) as every
# other tier does.
#
#   build-vm.sh IMAGE_DIR [KERNEL_CACHE_DIR]
#   build-vm.sh --inputs IMAGE_DIR [KERNEL_CACHE_DIR]
#
# reads IMAGE_DIR/root (and IMAGE_DIR/manifest.json) and makes IMAGE_DIR/vm/:
#
#   vmlinux         Debian's cloud kernel (linux-image-cloud-amd64), the ELF
#                   inside its vmlinuz: QEMU boots it through its PVH note,
#                   without the decompressor (which costs ~240 ms under TCG)
#   initramfs.cpio  newc, uncompressed (TCG decompresses slowly): /init (the
#                   static guest agent) and the five virtio modules in
#                   /lib/modules; nothing of the image. The agent loads the
#                   modules, mounts root.ext4 read-only and makes it the
#                   root (boot.c switch_root).
#   root.ext4       the image's root, whole, as an ext4 file system without a
#                   journal (mke2fs -d), plus /.agentjail/zygote.py; QEMU
#                   attaches it read-only (virtio-blk), so guest RAM holds
#                   only what a run reads, whatever the image's size
#   manifest        key=value: the kernel version, sizes, and as input.* the
#                   checksums of every input. `--inputs` prints those input.*
#                   lines without building, so a caller rebuilds only when
#                   they differ from the manifest's.
#
# The kernel packages are fetched with `apt-get download` into
# KERNEL_CACHE_DIR (default /var/cache/agentjail/kernel) and reused from there
# while they are. The build happens in IMAGE_DIR/vm.tmp-PID and is renamed
# into place at the end: IMAGE_DIR/vm is whole or absent, never half built.
# Needs: apt-get, dpkg, lz4, cpio, mke2fs and debugfs (e2fsprogs), gcc with
# a static glibc.
set -eu

die() {
	echo "build-vm: $*" >&2
	exit 1
}

inputs_only=false
if [ "${1:-}" = --inputs ]; then
	inputs_only=true
	shift
fi
[ $# -ge 1 ] && [ $# -le 2 ] || die "usage: build-vm.sh [--inputs] IMAGE_DIR [KERNEL_CACHE_DIR]"
image=$(cd "$1" 2>/dev/null && pwd) || die "$1 is not a directory"
cache=${2:-/var/cache/agentjail/kernel}
root=$image/root
here=$(cd "$(dirname "$0")" && pwd)
guest=$here/../src/vm/guest
src=$here/../src
[ -d "$root" ] || die "$root is not a directory (make the image with 'agentjail image build')"
# The agent's sources: the guest's own, and the host's files it is built
# with instead of copies of them (libc only: the agent is static).
guest_sources="agent.c boot.c clock.c egress.c failure.c frame.c policy.c port.c restore.c run.c trust.c
run_cgroup.c session.c watch.c workspace.c zygote.c"
core_sources="core/io.c core/capture.c core/session_scan.c core/contract.c core/keyed.c
core/result.c linux/supervisor.c linux/egress_listen.c vm/egress_mux.c"
agent_sources=""
for f in $guest_sources; do agent_sources="$agent_sources $guest/$f"; done
for f in $core_sources; do agent_sources="$agent_sources $src/$f"; done
# What the agent is built from and with, each hashed into the inputs.
agent_inputs="$agent_sources $guest/agent.h $guest/zygote.py $guest/../protocol.h
$src/core/internal.h $src/core/session_call.h $src/core/contract.h $src/core/keyed.h $src/core/thread.h $here/../include/agentjail.h $src/linux/seccomp_policy.c
$src/linux/supervisor.h $src/linux/report.h $src/linux/egress_listen.h
$here/../tools/gen_filter.c $src/vm/egress_mux.h"
# Not built into the agent, but the machine its snapshots are taken of
# (QEMU's devices): a snapshot restores only into the machine it came from,
# so a change there remakes the VM directory, and with it the snapshots.
agent_inputs="$agent_inputs $src/vm/qemu.c"
for f in $agent_inputs; do
	[ -f "$f" ] || die "$f is missing"
done

# The five modules the agent loads, in its order, and where the kernel
# package keeps them.
modules="drivers/virtio/virtio_ring.ko drivers/virtio/virtio.ko
drivers/virtio/virtio_mmio.ko drivers/block/virtio_blk.ko drivers/char/virtio_console.ko"

sha() {
	if [ -f "$1" ]; then sha256sum "$1" | cut -d' ' -f1; else echo missing; fi
}

# ---- the kernel ----

# The newest meta package in the cache and the versioned package it depends
# on: "linux-image-6.1.0-56-cloud-amd64 6.1.192-2".
kernel_dependency() {
	meta=$(ls "$cache"/linux-image-cloud-amd64_*_amd64.deb 2>/dev/null | sort -V | tail -n 1)
	[ -n "$meta" ] || return 1
	dpkg-deb -f "$meta" Depends |
		sed -n 's/^\(linux-image-[0-9][^ ,]*-cloud-amd64\) (= \([^)]*\)).*/\1 \2/p'
}

# apt-get download into a private directory first: a failed download leaves
# no partial .deb in the cache to be "reused" next time.
download() {
	dl=$cache/download.$$
	mkdir -p "$dl"
	if ! (cd "$dl" && apt-get download "$@") >&2; then
		rm -rf "$dl"
		die "apt-get download $* failed (is the package index there? apt-get update)"
	fi
	mv "$dl"/*.deb "$cache"/
	rm -rf "$dl"
}

fetch_kernel() {
	mkdir -p "$cache"
	dep=$(kernel_dependency) || {
		download linux-image-cloud-amd64
		dep=$(kernel_dependency) || die "no linux-image-cloud-amd64 package in $cache"
	}
	[ -n "$dep" ] || die "linux-image-cloud-amd64 depends on no linux-image-*-cloud-amd64"
	kpkg=${dep% *}
	kver=${kpkg#linux-image-}
	deb=$(ls "$cache/${kpkg}_${dep#* }_amd64.deb" 2>/dev/null) || {
		download "$kpkg=${dep#* }"
		deb=$cache/${kpkg}_${dep#* }_amd64.deb
	}
	[ -f "$deb" ] || die "$deb is missing after the download"
}

# extract-vmlinux, for the LZ4 bzImage Debian ships: try every LZ4 legacy
# frame magic (02 21 4c 18) in the file until one decompresses to an ELF.
extract_vmlinux() {
	for off in $(LC_ALL=C grep -obUaP '\x02\x21\x4c\x18' "$1" | cut -d: -f1); do
		# lz4 complains about the bytes after the payload; the output
		# before that is the kernel.
		tail -c +$((off + 1)) "$1" | lz4 -dc >"$2" 2>/dev/null || true
		[ "$(head -c 4 "$2" | od -An -tx1 | tr -d ' \n')" = 7f454c46 ] && return 0
	done
	return 1
}

# ---- looking in the image root ----

# walk PATH: follows PATH inside the image root, every symlink resolved
# against the root (not the host). Sets $resolved (the path with no symlink
# in it); fails if nothing is there.
walk() {
	rest=${1#/} real='' hops=0
	while [ -n "$rest" ]; do
		comp=${rest%%/*}
		case $rest in */*) rest=${rest#*/} ;; *) rest= ;; esac
		case $comp in
		'' | .) continue ;;
		..) real=${real%/*}; continue ;;
		esac
		if [ -L "$root$real/$comp" ]; then
			hops=$((hops + 1))
			[ $hops -le 40 ] || return 1
			link=$(readlink "$root$real/$comp")
			case $link in
			/*) real='' rest=${link#/}${rest:+/$rest} ;;
			*) rest=$link${rest:+/$rest} ;;
			esac
		else
			real=$real/$comp
		fi
	done
	resolved=${real:-/}
	[ -e "$root$resolved" ]
}

# ---- inputs ----

kernel_deb_sum() {
	dep=$(kernel_dependency 2>/dev/null) || { echo missing; return; }
	sha "$cache/${dep% *}_${dep#* }_amd64.deb"
}

print_inputs() {
	echo "input.image_manifest=$(sha "$image/manifest.json")"
	# One line a file, named by its path under the repository.
	for f in $agent_inputs; do
		name=$(realpath --relative-to="$here/.." "$f")
		echo "input.$name=$(sha "$f")"
	done
	echo "input.build_vm_sh=$(sha "$here/build-vm.sh")"
	echo "input.kernel_deb=$1"
}

if $inputs_only; then
	print_inputs "$(kernel_deb_sum)"
	exit 0
fi

# ---- the build ----

tmp=$image/vm.tmp-$$
stage=$tmp/initramfs
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM HUP
rm -rf "$tmp"
mkdir -p "$stage"

fetch_kernel
echo "build-vm: kernel $kver from $(basename "$deb")" >&2
dpkg -x "$deb" "$tmp/kernel"
vmlinuz=$tmp/kernel/boot/vmlinuz-$kver
[ -f "$vmlinuz" ] || die "$deb has no boot/vmlinuz-$kver"
extract_vmlinux "$vmlinuz" "$tmp/vmlinux" || die "no LZ4-compressed ELF kernel found in $vmlinuz"

# The image must have what the agent starts and mounts on.
walk /usr/bin/python3 || die "the image has no /usr/bin/python3"
ver=$(basename "$resolved")
case $ver in python3.*) ;; *) die "/usr/bin/python3 resolves to $resolved, not python3.X" ;; esac
for d in proc dev tmp var/tmp sys; do
	[ -d "$root/$d" ] && [ ! -L "$root/$d" ] ||
		die "the image has no directory /$d to mount on (rebuild it with 'agentjail image build')"
done
[ ! -e "$root/.agentjail" ] || die "the image has a /.agentjail of its own; the guest's files go there"

# The image's root, whole, as the guest's read-only disk: the same files,
# modes and owners every other tier shows (mke2fs -d copies them). No
# journal: nothing ever writes to it (QEMU attaches it read-only, the agent
# mounts it read-only). Sized for the files with a fifth to spare, and an
# inode for each with the same margin.
kb=$(du -sk "$root" | cut -f1)
files=$(find "$root" -xdev | wc -l)
inodes=$((files + files / 5 + 1024))
size_kb=$((kb + kb / 5 + inodes / 4 + 16384))
: >"$tmp/root.ext4"
mke2fs -q -F -t ext4 -O ^has_journal,^resize_inode -b 4096 -I 256 -N "$inodes" -m 0 \
	-L agentjail -E root_owner=0:0 -d "$root" "$tmp/root.ext4" "${size_kb}k" >&2 ||
	die "mke2fs -d $root failed (e2fsprogs 1.43 or later is needed)"
# mke2fs's lost+found is not the image's: gone, so / lists what it lists on
# every other tier. The zygote's script, in a directory of its own beside the
# image's files
# (the agent starts `python3 -I -u /.agentjail/zygote.py`), root's and not
# writable, like the rest of the disk.
debugfs -w -f - "$tmp/root.ext4" >/dev/null 2>"$tmp/debugfs.log" <<EOF2 ||
rmdir lost+found
mkdir .agentjail
cd .agentjail
write $guest/zygote.py zygote.py
sif zygote.py mode 0100644
sif zygote.py uid 0
sif zygote.py gid 0
cd /
sif .agentjail mode 040755
sif .agentjail uid 0
sif .agentjail gid 0
EOF2
	die "debugfs could not add the zygote to the disk (see $tmp/debugfs.log)"
# debugfs reports a failed request on stderr and still exits 0.
if grep -qiE "error|cannot|not found|Filesystem opened read/only" "$tmp/debugfs.log"; then
	cat "$tmp/debugfs.log" >&2
	die "debugfs could not add the zygote to the disk"
fi
rm -f "$tmp/debugfs.log"
# QEMU runs as the run's own uid: the disk is world-readable, like the kernel.
chmod 0644 "$tmp/root.ext4"

# The initramfs: the agent and the modules it loads before the disk is there.
mkdir -p "$stage/lib/modules"
for m in $modules; do
	ko=
	for d in "$tmp/kernel/lib/modules/$kver" "$tmp/kernel/usr/lib/modules/$kver"; do
		[ -f "$d/kernel/$m" ] && ko=$d/kernel/$m
	done
	[ -n "$ko" ] || die "$deb has no $m (the agent loads it with finit_module)"
	cp "$ko" "$stage/lib/modules/"
done
rm -rf "$tmp/kernel"

# The system-call policy every tier runs under (src/linux/seccomp_policy.c),
# compiled to BPF here as the host build does, for the agent to load into the
# zygote and so into every program it runs.
gen=$tmp/gen
mkdir -p "$gen"
${CC:-gcc} -std=c11 -D_GNU_SOURCE -O2 -o "$gen/gen_filter" "$here/../tools/gen_filter.c" \
	"$src/linux/seccomp_policy.c" -lseccomp || die "building the filter generator failed (libseccomp-dev)"
"$gen/gen_filter" >"$gen/seccomp_filter.inc" || die "generating the seccomp filter failed"

# The agent: static, so /init needs no loader or library of the image.
# shellcheck disable=SC2086 # the lists are paths without spaces, split here
${CC:-gcc} -std=c11 -D_GNU_SOURCE -O2 -static -pthread -Wall -Wextra -Werror -s -I"$gen" \
	-I"$here/../include" -o "$stage/init" $agent_sources ||
	die "building the agent failed"
rm -rf "$gen"

# Mount points: the agent mounts /proc and /dev here first, the disk on
# /root, and then moves all three so the disk is / (boot.c switch_root).
for d in proc dev root; do
	mkdir -p "$stage/$d"
	chmod 0755 "$stage/$d"
done
(cd "$stage" && find . -mindepth 1 -print0 | LC_ALL=C sort -z |
	cpio --null -o -H newc -R 0:0 --reproducible --quiet) >"$tmp/initramfs.cpio"
rm -rf "$stage"

{
	echo "# made by images/build-vm.sh; input.* lines are what it was built from"
	echo "kernel_version=$kver"
	echo "kernel_package=$(basename "$deb")"
	echo "python=$ver"
	echo "vmlinux_bytes=$(wc -c <"$tmp/vmlinux")"
	echo "initramfs_bytes=$(wc -c <"$tmp/initramfs.cpio")"
	echo "root_ext4_bytes=$(wc -c <"$tmp/root.ext4")"
	echo "built=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
	print_inputs "$(sha "$deb")"
} >"$tmp/manifest"

# Into place: the old vm/ is moved aside only once the new one is complete.
old=$image/vm.old-$$
if [ -e "$image/vm" ]; then mv "$image/vm" "$old"; fi
mv "$tmp" "$image/vm"
rm -rf "$old"
trap - EXIT
echo "build-vm: $image/vm: vmlinux $(wc -c <"$image/vm/vmlinux") bytes," \
	"initramfs.cpio $(wc -c <"$image/vm/initramfs.cpio") bytes," \
	"root.ext4 $(du -k "$image/vm/root.ext4" | cut -f1) KiB used" >&2
