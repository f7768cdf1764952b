#!/bin/sh
# Builds an image root for agentjail's container (and later microvm, docker)
# tiers. Called by `agentjail image build`, which owns the naming, the
# temporary directory, the manifest and the atomic rename; this script only
# fills ROOT.
#
#   build-root.sh debootstrap ROOT [PACKAGES]   Debian bookworm, minbase, with
#                                               python3 (full stdlib),
#                                               ca-certificates, the
#                                               userland below (a shell,
#                                               coreutils, git, curl,
#                                               nodejs...) and the
#                                               comma-separated PACKAGES
#   build-root.sh host ROOT [PACKAGES]          the host's /usr/bin/python3, its
#                                               standard library and the
#                                               libraries they link: no
#                                               network, about a second;
#                                               the host's CA bundle; and
#                                               PACKAGES as the host has
#                                               them installed (with their
#                                               Python, data and font
#                                               dependencies and the C
#                                               libraries their programs
#                                               link), each whole
#                                               (see "whole" below)
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

# What a package's maintainer scripts or triggers generate that dpkg -L
# does not list, as paths under / (files, or directories taken whole).
generated_by() {
	case "$1" in
	# update-ca-certificates: the bundle and the hashed links beside it.
	ca-certificates) echo etc/ssl/certs ;;
	esac
}

# The shared libraries named in the ldd output on stdin, each copied to the
# same path in the root (the file, not a link to it) unless already there.
copy_linked() {
	awk '/\//{for (i = 1; i <= NF; i++) if ($i ~ /^\//) print $i}' | sort -u |
		while read -r lib; do
			[ -e "$lib" ] && [ ! -e "$root$lib" ] || continue
			mkdir -p "$root$(dirname "$lib")"
			cp -L "$lib" "$root$lib"
		done
}

# The userland every image from Debian carries beside Python, each as
# PACKAGE:COMMAND (a command of it the build checks is there): bash and dash
# (/bin/sh) for shell commands, the tools a program starts to look around,
# search, fetch and check out (coreutils, grep, sed, findutils, curl, git,
# procps' ps), and JavaScript (Debian's nodejs). minbase already has the
# essential ones; they are named so that no change of Debian's leaves them
# out unnoticed.
userland="bash:bash dash:sh coreutils:ls grep:grep sed:sed findutils:find curl:curl git:git
procps:ps nodejs:node"

[ -d "$root" ] || die "$root is not a directory"

case "$mode" in
debootstrap)
	command -v debootstrap >/dev/null || die "debootstrap is not installed (apt-get install debootstrap)"
	include=python3,ca-certificates
	for u in $userland; do include="$include,${u%%:*}"; done
	[ -n "$packages" ] && include="$include,$packages"
	# minbase: dpkg, apt and the essentials, no init system; python3, not
	# python3-minimal, so the whole standard library is there.
	# ca-certificates: Debian's CA bundle, which its postinst generates
	# (/etc/ssl/certs/ca-certificates.crt), so that HTTPS through an
	# egress rule verifies (docs/egress.md, "HTTPS").
	debootstrap --variant=minbase --include="$include" bookworm "$root" >&2 ||
		die "debootstrap failed (see above)"
	# Package caches and lists: nothing a program needs, a lot of space.
	rm -rf "$root/var/cache/apt/archives/"*.deb "$root/var/lib/apt/lists/"*
	for u in $userland; do
		chroot "$root" /bin/sh -c "PATH=/usr/bin:/bin; command -v ${u#*:}" >/dev/null ||
			die "the image has no ${u#*:} (Debian package ${u%%:*})"
	done
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
	} 2>/dev/null | copy_linked
	# PACKAGES, from the host's own installation: each package's files and
	# those of the Python, data and font packages it depends on (its C
	# libraries, and its programs', come with the ldd pass below).
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
		# Each package arrives whole: what dpkg -L lists, and what its
		# maintainer scripts and triggers made, which dpkg lists nowhere:
		#  - the byte-compiled caches of its Python modules (py3compile in
		#    postinst), or every import would compile them again;
		#  - the targets of its symlinks that lie outside what it lists
		#    (update-alternatives: /etc/alternatives/...), copied as the
		#    host resolves them;
		#  - the outputs of the generators in generated_by below (the CA
		#    bundle of update-ca-certificates).
		# A generator not in that table is a package that does not arrive
		# whole: add it there (docs/cli.md, "agentjail image").
		list=$(mktemp)
		for p in $done_list; do
			dpkg -L "$p" 2>/dev/null | while read -r f; do
				[ -f "$f" ] || [ -L "$f" ] || continue
				case "$f" in /usr/share/doc/* | /usr/share/man/*) continue ;; esac
				echo "${f#/}"
				case "$f" in
				*.py)
					for c in "${f%/*}/__pycache__/$(basename "$f" .py)".cpython-*.pyc; do
						[ -f "$c" ] && echo "${c#/}"
					done
					;;
				esac
			done
			for g in $(generated_by "$p"); do
				[ -e "/$g" ] && find "/$g" \( -type f -o -type l \) | sed 's|^/||'
			done
		done | sort -u >"$list"
		# A directory a package ships that is a link on this host (merged
		# /usr: procps lists /sbin, here -> usr/sbin) is not copied as that
		# link, which would lead the files listed through it (/sbin/sysctl)
		# to a directory the root may lack: they go into one of its name.
		# A package's own link to a directory, nothing listed through it
		# (tzdata's zoneinfo/posix/Africa), stays a link.
		while read -r f; do
			[ -L "/$f" ] && [ -d "/$f" ] || continue
			awk -v p="$f/" 'index($0, p) == 1 {found = 1; exit} END {exit !found}' "$list" &&
				echo "$f"
		done <"$list" >"$list.through"
		grep -vxF -f "$list.through" "$list" >"$list.files" || true
		mv "$list.files" "$list"
		rm -f "$list.through"
		tar -C / -cf - -T "$list" | tar -C "$root" -xf -
		# Symlink targets outside the list, followed link by link (an
		# alternative is two links deep), until none is missing.
		while read -r f; do
			[ -L "/$f" ] || continue
			t=/$f
			hops=0
			while [ -L "$t" ] && [ $hops -lt 8 ]; do
				l=$(readlink "$t")
				case "$l" in /*) t=$l ;; *) t=$(dirname "$t")/$l ;; esac
				# A directory is a package's own, listed where it is one.
				[ -d "$t" ] && [ ! -L "$t" ] && break
				[ -e "$root$t" ] || [ -L "$root$t" ] || [ ! -e "$t" ] ||
					{ mkdir -p "$root$(dirname "$t")" && cp -a "$t" "$root$t"; }
				hops=$((hops + 1))
			done
		done <"$list"
		# The C libraries every program and shared object of theirs links
		# (ldd follows them all the way): a Python extension's, and a
		# program's such as nodejs' /usr/bin/node (libstdc++; on Debian's
		# own build libnode, libuv, ICU, OpenSSL), which no Python, data or
		# font dependency brings.
		while read -r f; do
			[ -f "/$f" ] && [ ! -L "/$f" ] || continue
			case "$f" in *.so | *.so.*) ;; *) [ -x "/$f" ] || continue ;; esac
			echo "/$f"
		done <"$list" | xargs -r -d '\n' ldd 2>/dev/null | copy_linked
		rm -f "$list"
	fi
	# The CA bundle, as the host's ca-certificates made it, and the links
	# by which OpenSSL's default paths (/usr/lib/ssl/cert.pem, certs/ and
	# openssl.cnf, as Debian lays them out) reach it: HTTPS through an
	# egress rule verifies (docs/egress.md, "HTTPS").
	[ -s /etc/ssl/certs/ca-certificates.crt ] ||
		die "this host has no CA bundle at /etc/ssl/certs/ca-certificates.crt (apt-get install ca-certificates)"
	mkdir -p "$root/etc/ssl/certs" "$root/usr/lib/ssl"
	cp -L /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
	[ -f /etc/ssl/openssl.cnf ] && cp -L /etc/ssl/openssl.cnf "$root/etc/ssl/openssl.cnf"
	ln -sfn /etc/ssl/certs/ca-certificates.crt "$root/usr/lib/ssl/cert.pem"
	ln -sfn /etc/ssl/certs "$root/usr/lib/ssl/certs"
	ln -sfn /etc/ssl/openssl.cnf "$root/usr/lib/ssl/openssl.cnf"
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
		ldd "$real" 2>/dev/null | copy_linked
	done
	# A file, not the link a package's may have brought (tzdata's
	# zoneinfo/localtime -> /etc/localtime, followed above).
	[ -e /etc/localtime ] && rm -f "$root/etc/localtime" && cp -L /etc/localtime "$root/etc/localtime"
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
# Every image verifies HTTPS with Debian's CA bundle: an empty one would
# fail every request only once a sandbox is let out.
[ -s "$root/etc/ssl/certs/ca-certificates.crt" ] ||
	die "the image has no CA bundle at /etc/ssl/certs/ca-certificates.crt"
chroot "$root" /usr/bin/python3 -c 'import platform; print(platform.python_version())'
