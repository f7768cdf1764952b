#!/bin/sh
# Builds what the microvm tier boots from an image made by `agentjail image
# build`: a kernel and an initramfs holding the guest agent and the image's
# Python.
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
#                   static guest agent), /agent/zygote.py, the four virtio
#                   modules in /lib/modules, and from the image only what
#                   Python needs: python3, the libraries it and its extension
#                   modules link, its standard library (no test suite, IDLE,
#                   tkinter...), dist-packages and the data they read from
#                   /usr/share (matplotlib, fonts, zoneinfo), passwd, group,
#                   C.UTF-8, the CA bundle and OpenSSL's links to it
#   manifest        key=value: the kernel version, sizes, and as input.* the
#                   checksums of every input. `--inputs` prints those input.*
#                   lines without building, so a caller rebuilds only when
#                   they differ from the manifest's.
#
# The kernel packages are fetched with `apt-get download` into
# KERNEL_CACHE_DIR (default /var/cache/agentjail/kernel) and reused from there
# while they are. The build happens in IMAGE_DIR/vm.tmp-PID and is renamed
# into place at the end: IMAGE_DIR/vm is whole or absent, never half built.
# Needs: apt-get, dpkg, lz4, readelf, cpio, gcc with a static glibc.
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
$src/core/internal.h $src/core/session_call.h $src/core/contract.h $src/core/keyed.h $here/../include/agentjail.h $src/linux/seccomp_policy.c
$src/linux/supervisor.h $src/linux/report.h $src/linux/egress_listen.h
$here/../tools/gen_filter.c $src/vm/egress_mux.h"
# Not built into the agent, but the machine its snapshots are taken of
# (QEMU's devices): a snapshot restores only into the machine it came from,
# so a change there remakes the VM directory, and with it the snapshots.
agent_inputs="$agent_inputs $src/vm/qemu.c"
for f in $agent_inputs; do
	[ -f "$f" ] || die "$f is missing"
done

# The four modules the agent loads, in its order, and where the kernel
# package keeps them.
modules="drivers/virtio/virtio_ring.ko drivers/virtio/virtio.ko
drivers/virtio/virtio_mmio.ko drivers/char/virtio_console.ko"

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

# ---- copying from the image root ----

# walk PATH MODE: follows PATH inside the image root, every symlink resolved
# against the root (not the host). MODE copy: also makes each symlink met on
# the way in the stage, so the path resolves there as it does in the image,
# and copies what it names. Sets $resolved (the path with no symlink in it);
# fails if nothing is there.
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
			if [ "$2" = copy ] && [ ! -L "$stage$real/$comp" ]; then
				# A real directory there would shadow the link.
				[ ! -e "$stage$real/$comp" ] || return 1
				mkdir -p "$stage$real"
				ln -s "$link" "$stage$real/$comp" || return 1
			fi
			case $link in
			/*) real='' rest=${link#/}${rest:+/$rest} ;;
			*) rest=$link${rest:+/$rest} ;;
			esac
		else
			real=$real/$comp
		fi
	done
	resolved=${real:-/}
	[ -e "$root$resolved" ] || return 1
	[ "$2" = copy ] || return 0
	if [ -d "$root$resolved" ]; then
		mkdir -p "$stage$resolved"
	elif [ ! -e "$stage$resolved" ]; then
		mkdir -p "$stage${resolved%/*}"
		cp -p "$root$resolved" "$stage$resolved"
	fi
}

install() {
	walk "$1" copy || die "$1: not in the image"
}

# A directory tree of the image, as is (symlinks inside it stay symlinks).
copy_tree() {
	walk "$1" copy || return 0
	shift
	(cd "$root" && tar -cf - "$@" "${resolved#/}") | tar -C "$stage" -xf -
}

# Symlinks a copied tree brought that point outside it (Debian's
# sitecustomize.py -> /etc/python3.11/): copy what they name too. (Every
# one is walked: testing them in the stage would follow absolute ones to the
# host's files.) A dangling one stays dangling, as in the image.
follow_links() {
	find "$@" -type l 2>/dev/null | while read -r l; do
		walk "${l#"$stage"}" copy || continue
		# A directory (matplotlib's mpl-data -> /usr/share/matplotlib/)
		# comes whole, and the links inside it are followed in turn
		# (its fonts -> /usr/share/fonts/).
		if [ -d "$root$resolved" ] && [ -z "$(ls -A "$stage$resolved")" ]; then
			(cd "$root" && tar -cf - "${resolved#/}") | tar -C "$stage" -xf -
			follow_links "$stage$resolved"
		fi
	done
}

# Every library the ELF files named on stdin link, found as the loader finds
# them (its default directories, then the file's own RUNPATH), copied with
# the symlinks on their path; and the libraries those link, and so on.
copy_libraries() {
	queue=$tmp/elf-queue seen=$tmp/elf-seen
	cat >"$queue"
	: >"$seen"
	while [ -s "$queue" ]; do
		elf=$(head -n 1 "$queue")
		sed -i 1d "$queue"
		grep -qxF "$elf" "$seen" && continue
		echo "$elf" >>"$seen"
		origin=${elf%/*}
		dirs="/lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu /lib64 /usr/lib64 /lib /usr/lib"
		runpath=$(LC_ALL=C readelf -d "$root$elf" 2>/dev/null |
			sed -n 's/.*(R[UN]*PATH).*\[\(.*\)\]/\1/p' | tr ':' ' ')
		for d in $runpath; do
			dirs="$dirs $(echo "$d" | sed "s|\\\$ORIGIN|$origin|; s|\\\${ORIGIN}|$origin|")"
		done
		interp=$(LC_ALL=C readelf -l "$root$elf" 2>/dev/null |
			sed -n 's/.*\[Requesting program interpreter: \(.*\)\]/\1/p')
		if [ -n "$interp" ]; then
			install "$interp"
			echo "$resolved" >>"$queue"
		fi
		for lib in $(LC_ALL=C readelf -d "$root$elf" 2>/dev/null |
			sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
			found=false
			for d in $dirs; do
				if walk "$d/$lib" check; then
					install "$d/$lib"
					echo "$resolved" >>"$queue"
					found=true
					break
				fi
			done
			# Only that extension module would fail to import: say so,
			# do not refuse the image.
			$found || echo "build-vm: warning: $elf needs $lib, not found in the image" >&2
		done
	done
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

# Python: the interpreter, its standard library, its libraries.
install /usr/bin/python3
python=$resolved
ver=$(basename "$python")
case $ver in python3.*) ;; *) die "/usr/bin/python3 resolves to $python, not python3.X" ;; esac
copy_tree "/usr/lib/$ver" \
	--exclude="usr/lib/$ver/test" --exclude="usr/lib/$ver/idlelib" \
	--exclude="usr/lib/$ver/tkinter" --exclude="usr/lib/$ver/turtledemo" \
	--exclude="usr/lib/$ver/ensurepip" --exclude="usr/lib/$ver/lib2to3" \
	--exclude="usr/lib/$ver/pydoc_data" --exclude="usr/lib/$ver/config-*"
[ -d "$stage/usr/lib/$ver/lib-dynload" ] || die "/usr/lib/$ver/lib-dynload is not in the image"
# Packages the image was built with (--packages), Debian's and pip's.
copy_tree /usr/lib/python3/dist-packages
for d in "$root"/usr/local/lib/python3*/dist-packages; do
	if [ -d "$d" ]; then copy_tree "${d#"$root"}"; fi
done
# Data Debian's Python packages read from outside dist-packages, where the
# image has it: matplotlib's mpl-data (its fonts link to /usr/share/fonts)
# and the time zones python3-tz and pandas look up.
for d in /usr/share/matplotlib /usr/share/fonts /usr/share/zoneinfo; do
	[ -d "$root$d" ] && copy_tree "$d"
done
follow_links "$stage/usr/lib/$ver" "$stage/usr/lib/python3" "$stage/usr/local/lib" \
	"$stage/usr/share"
# libgcc_s, which no ELF names: glibc dlopens it to unwind a thread in
# pthread_exit (a daemon thread ended at interpreter exit, say), and aborts
# the program without it.
for d in /lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu; do
	if walk "$d/libgcc_s.so.1" check; then
		install "$d/libgcc_s.so.1"
		break
	fi
done
{
	echo "$python"
	find "$stage/usr/lib/$ver" "$stage/usr/lib/python3" "$stage/usr/local/lib" \
		-name '*.so*' -type f 2>/dev/null | sed "s|^$stage||" || true
} | copy_libraries

# What the interpreter and the program look up. ld.so.cache lets the loader
# find libraries outside its default directories, as in the image.
install /etc/passwd
install /etc/group
# /etc/matplotlibrc: Debian's matplotlib reads its defaults there and nowhere else.
for f in /etc/ld.so.cache /etc/localtime /etc/matplotlibrc; do
	if walk "$f" check; then install "$f"; fi
done
copy_tree /usr/lib/locale/C.utf8
# The image's CA bundle, and the links by which OpenSSL's default paths
# reach it, as in the image: HTTPS through an egress rule verifies
# (docs/egress.md, "HTTPS"); with --trust-ca the agent mounts the host's
# combined bundle over this file.
install /etc/ssl/certs/ca-certificates.crt
for f in /usr/lib/ssl/cert.pem /usr/lib/ssl/certs /etc/ssl/openssl.cnf /usr/lib/ssl/openssl.cnf; do
	if walk "$f" check; then install "$f"; fi
done

# Ours last, so the image's layout (a /lib -> usr/lib symlink, say) is in
# place and these follow it instead of shadowing it.
mkdir -p "$stage/lib/modules" "$stage/agent"
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
cp "$guest/zygote.py" "$stage/agent/zygote.py"

# Mount points: the agent mounts over them, so they stay empty and root's.
# /sys is mounted over by nothing: the program's /sys is this empty
# directory, read-only with the rest of / (boot.c mount_filesystems).
for d in proc sys dev tmp var/tmp; do
	mkdir -p "$stage/$d"
	chmod 0755 "$stage/$d"
done
# Nothing in the initramfs may raise privilege or take a write from the
# program: no setuid or setgid bit, nothing world-writable (the agent also
# mounts / read-only before the first run).
find "$stage" -type f \( -perm -4000 -o -perm -2000 \) -exec chmod ug-s {} +
find "$stage" ! -type l -perm -0002 -exec chmod o-w {} +

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
	echo "built=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
	print_inputs "$(sha "$deb")"
} >"$tmp/manifest"
rm -f "$tmp/elf-queue" "$tmp/elf-seen"

# Into place: the old vm/ is moved aside only once the new one is complete.
old=$image/vm.old-$$
if [ -e "$image/vm" ]; then mv "$image/vm" "$old"; fi
mv "$tmp" "$image/vm"
rm -rf "$old"
trap - EXIT
echo "build-vm: $image/vm: vmlinux $(wc -c <"$image/vm/vmlinux") bytes," \
	"initramfs.cpio $(wc -c <"$image/vm/initramfs.cpio") bytes" >&2
