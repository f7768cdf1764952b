#!/bin/sh
# Builds an image root for agentjail's container (and later microvm, docker)
# tiers. Called by `agentjail image build`, which owns the naming, the
# temporary directory, the manifest and the atomic rename; this script only
# fills ROOT.
#
#   build-root.sh debootstrap ROOT [PACKAGES]   Debian bookworm, minbase, with
#                                               python3 (full stdlib) and the
#                                               comma-separated PACKAGES
#   build-root.sh host ROOT [PACKAGES]          the host's /usr/bin/python3, its
#                                               standard library and the
#                                               libraries they link: no
#                                               network, about a second;
#                                               and PACKAGES as the host has
#                                               them installed (with their
#                                               Python, data and font
#                                               dependencies)
#
# Either way the root is then made fit to be mounted read-only: no setuid or
# setgid bits, no password hashes, the mount points the tiers use present.
# Prints the image's Python version as its last line.
set -eu

mode=$1
root=$2
packages=${3:-}

die() {
	echo "build-root: $*" >&2
	exit 1
}

[ -d "$root" ] || die "$root is not a directory"

case "$mode" in
debootstrap)
	command -v debootstrap >/dev/null || die "debootstrap is not installed (apt-get install debootstrap)"
	include=python3
	[ -n "$packages" ] && include="python3,$packages"
	# minbase: dpkg, apt and the essentials, no init system; python3, not
	# python3-minimal, so the whole standard library is there.
	debootstrap --variant=minbase --include="$include" bookworm "$root" >&2 ||
		die "debootstrap failed (see above)"
	# Package caches and lists: nothing a program needs, a lot of space.
	rm -rf "$root/var/cache/apt/archives/"*.deb "$root/var/lib/apt/lists/"*
	;;
host)
	py=$(readlink -f /usr/bin/python3)
	ver=$(basename "$py")           # python3.11
	mkdir -p "$root/usr/bin" "$root/usr/lib" "$root/etc" "$root/bin"
	cp -a "$py" "$root$py"
	ln -sf "$ver" "$root/usr/bin/python3"
	# The standard library, without its own test suite and build config.
	tar -C / --exclude="usr/lib/$ver/test" --exclude="usr/lib/$ver/config-*" \
		-cf - "usr/lib/$ver" | tar -C "$root" -xf -
	# Every shared library the interpreter and its extension modules link,
	# at the same paths (the loader's own included).
	# And libgcc_s, which no ldd lists: glibc dlopens it to unwind a
	# thread's stack in pthread_exit, so without it any Python thread that
	# ends while the program runs aborts it ("libgcc_s.so.1 must be
	# installed for pthread_exit to work").
	{
		ldd "$py"
		find "/usr/lib/$ver/lib-dynload" -name '*.so' -exec ldd {} \;
		/sbin/ldconfig -p | awk '$1 == "libgcc_s.so.1" && /x86-64/ {print "=> " $NF; exit}'
	} 2>/dev/null | awk '/\//{for (i = 1; i <= NF; i++) if ($i ~ /^\//) print $i}' |
		sort -u | while read -r lib; do
		[ -e "$lib" ] || continue
		mkdir -p "$root$(dirname "$lib")"
		cp -L "$lib" "$root$lib"
	done
	# PACKAGES, from the host's own installation: each package's files and
	# those of the Python, data and font packages it depends on (its C
	# libraries come with the ldd pass below).
	if [ -n "$packages" ]; then
		want=$(echo "$packages" | tr ',' ' ')
		for p in $want; do
			dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
				die "$p is not installed on this host (apt-get install $p, or build from Debian without --from-host)"
		done
		# Python packages are followed one level down (what the named ones
		# import); data, fonts and tzdata all the way. Deeper Python
		# dependencies are optional extras of extras (fonttools would
		# bring scipy and sympy): a user who needs them names them.
		done_list=" "
		depth=1
		while [ -n "$want" ]; do
			next=""
			for p in $want; do
				case "$done_list" in *" $p "*) continue ;; esac
				case "$p" in python3*) [ "$depth" -le 2 ] || continue ;; esac
				done_list="$done_list$p "
				dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || continue
				deps=$(dpkg-query -W -f='${Depends}' "$p" | tr ',|' '\n\n' |
					sed 's/([^)]*)//g; s/:any//; s/[[:space:]]//g' |
					grep -E '^(python3-|python-.*-data$|fonts-|tzdata$)' || true)
				next="$next $deps"
			done
			want=$next
			depth=$((depth + 1))
		done
		for p in $done_list; do
			dpkg -L "$p" 2>/dev/null | while read -r f; do
				[ -f "$f" ] || [ -L "$f" ] || continue
				case "$f" in /usr/share/doc/* | /usr/share/man/*) continue ;; esac
				echo "${f#/}"
			done
		done | sort -u | tar -C / -cf - -T - | tar -C "$root" -xf -
		find "$root/usr/lib/python3" -name '*.so' -exec ldd {} \; 2>/dev/null |
			awk '/\//{for (i = 1; i <= NF; i++) if ($i ~ /^\//) print $i}' |
			sort -u | while read -r lib; do
			[ -e "$lib" ] && [ ! -e "$root$lib" ] || continue
			mkdir -p "$root$(dirname "$lib")"
			cp -L "$lib" "$root$lib"
		done
	fi
	# C.UTF-8, the locale the sandbox's environment names.
	if [ -d /usr/lib/locale/C.utf8 ]; then
		mkdir -p "$root/usr/lib/locale"
		cp -a /usr/lib/locale/C.utf8 "$root/usr/lib/locale/"
	fi
	# A shell and the few tools a program starts to look around (ls, stat,
	# find), with the libraries they link: subprocess.run(["ls", "/"]) and
	# shell=True work here as in a Debian image.
	for tool in /bin/sh /usr/bin/ls /usr/bin/stat /usr/bin/find; do
		[ -e "$tool" ] || continue
		real=$(readlink -f "$tool")
		mkdir -p "$root$(dirname "$real")" "$root$(dirname "$tool")"
		[ -e "$root$real" ] || cp -L "$real" "$root$real"
		[ "$real" = "$tool" ] || [ -e "$root$tool" ] || ln -s "$real" "$root$tool"
		ldd "$real" 2>/dev/null | awk '/\//{for (i = 1; i <= NF; i++) if ($i ~ /^\//) print $i}' |
			while read -r lib; do
				[ -e "$lib" ] && [ ! -e "$root$lib" ] || continue
				mkdir -p "$root$(dirname "$lib")"
				cp -L "$lib" "$root$lib"
			done
	done
	[ -e /etc/localtime ] && cp -L /etc/localtime "$root/etc/localtime"
	printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n' >"$root/etc/passwd"
	printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
	;;
*)
	die "unknown mode '$mode' (debootstrap or host)"
	;;
esac

# Mount points every tier mounts on (the root itself is read-only by then).
# /mnt: empty, where a deployer's --ro-bind paths go (nothing of the image
# is covered by the mount points made there).
for d in tmp proc dev var/tmp sys mnt; do
	mkdir -p "$root/$d"
done
chmod 1777 "$root/tmp" "$root/var/tmp"
# An empty /etc/ld.so.preload (nothing preloaded), where the gvisor tier
# mounts its list naming its statx shim (src/gvisor/bundle.c): runsc would
# otherwise make that mount point in the image.
[ -e "$root/etc/ld.so.preload" ] || : >"$root/etc/ld.so.preload"
# No setuid or setgid programs: nothing in the image can raise privilege,
# whatever no_new_privs and nosuid already say.
find "$root" -xdev -type f \( -perm -4000 -o -perm -2000 \) -exec chmod ug-s {} +
# No password hashes in an image anyone's program can read.
for f in shadow gshadow; do
	[ -e "$root/etc/$f" ] && : >"$root/etc/$f"
done
chroot "$root" /usr/bin/python3 -c 'import platform; print(platform.python_version())'
