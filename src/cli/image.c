/* agentjail image: build, list and remove the image roots the container
 * tier (and later microvm and docker) run. An image is a directory
 * IMAGES/NAME holding root/ and manifest.json; IMAGES is $AGENTJAIL_IMAGES
 * or /var/lib/agentjail/images. images/build-root.sh fills the root; this
 * file makes building all-or-nothing: under a lock, into a temporary
 * directory, renamed into place only when complete. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <libgen.h>
#include <limits.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../docker/api.h"
#include "../docker/image.h"
#include "../linux/tree.h"
#include "cli.h"

static const char usage[] =
	"usage: agentjail image build [--name NAME] [--preset NAME] [--packages P1,P2,...]\n"
	"                             [--from-host] [--force]\n"
	"                             [--docker [--docker-socket PATH]]\n"
	"       agentjail image import [NAME] [--force] [--docker-socket PATH]\n"
	"       agentjail image list\n"
	"       agentjail image rm NAME\n"
	"\n"
	"Images live in $AGENTJAIL_IMAGES, or " AJ_DEFAULT_IMAGES_DIR ".\n"
	"\n"
	"build      makes image NAME (default 'default'): a Debian bookworm root from the\n"
	"           Debian repository (debootstrap, minbase) with python3 and its whole\n"
	"           standard library, Debian's CA bundle (ca-certificates), a userland\n"
	"           (bash, dash, coreutils, grep, sed, findutils, git, curl, procps) and\n"
	"           nodejs, plus --packages (e.g. python3-numpy,python3-pandas), each whole.\n"
	"           --preset datascience adds python3-numpy, python3-pandas,\n"
	"           python3-matplotlib (charts work out of the box in sessions) and\n"
	"           python3-pip, and names the image after the preset unless --name\n"
	"           says otherwise.\n"
	"           --from-host copies the host's own Python and the libraries it links\n"
	"           instead, with sh, ls, stat and find: no network, about a second (what\n"
	"           the tests use); with --packages or --preset, those packages as the host\n"
	"           has them installed, with the libraries their programs link\n"
	"           (--packages nodejs,coreutils: node and the coreutils).\n"
	"           Beside the root it makes the microvm tier's parts (vm/: Debian's cloud\n"
	"           kernel and an initramfs with the guest agent), remade when an input\n"
	"           changes. An image that exists is left as it is unless --force.\n"
	"           --docker imports it into the Docker Engine as well (see import).\n"
	"import     puts image NAME (default 'default') into the Docker Engine as\n"
	"           agentjail/NAME:latest, for the docker tier; skipped when the engine\n"
	"           already has this build of it, unless --force. The engine is\n"
	"           --docker-socket, else $DOCKER_HOST (unix://), else\n"
	"           /var/run/docker.sock.\n"
	"list       the images, with their Python, size, date and source\n"
	"rm NAME    removes an image\n";

static const char *images_dir(void)
{
	const char *d = getenv("AGENTJAIL_IMAGES");
	return d && d[0] == '/' ? d : AJ_DEFAULT_IMAGES_DIR;
}

/* Image names are plain: they become a directory name. */
static bool valid_name(const char *n)
{
	size_t len = strlen(n);
	if (len == 0 || len > 64 || n[0] == '.' || n[0] == '-')
		return false;
	for (const char *p = n; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '.' || *p == '_' || *p == '-'))
			return false;
	return true;
}

/* Debian package names, comma-separated: [a-z0-9][a-z0-9+.-]+. */
static bool valid_packages(const char *s)
{
	bool start = true;
	for (const char *p = s; *p; p++) {
		if (*p == ',') {
			if (start)
				return false;
			start = true;
			continue;
		}
		bool alnum = (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9');
		if (start ? !alnum : !(alnum || *p == '+' || *p == '.' || *p == '-'))
			return false;
		start = false;
	}
	return !start;
}

static unsigned long long tree_bytes;
static int add_size(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)path, (void)ftw;
	if (flag == FTW_F)
		tree_bytes += (unsigned long long)st->st_blocks * 512;
	return 0;
}

/* The build script: in the source tree the binary was built in
 * (build/agentjail and build/test/agentjail -> images/), or where a package
 * installs it. */
static int find_script(const char *name, char *out, size_t n)
{
	char exe[PATH_MAX];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (len > 0) {
		exe[len] = '\0';
		const char *dir = dirname(exe);
		static const char *const up[] = {"..", "../.."};
		for (size_t i = 0; i < 2; i++) {
			snprintf(out, n, "%s/%s/images/%s", dir, up[i], name);
			if (access(out, R_OK) == 0)
				return 0;
		}
	}
	snprintf(out, n, "/usr/share/agentjail/%s", name);
	return access(out, R_OK) == 0 ? 0 : -ENOENT;
}

/* Runs the script; its last line of stdout is the Python version. */
static int run_script(const char *script, const char *mode, const char *root,
		      const char *packages, char *version, size_t vn)
{
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		dup2(fds[1], 1);
		execl("/bin/sh", "sh", script, mode, root, packages ? packages : "", (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	char buf[4096];
	size_t got = 0;
	ssize_t r;
	while ((r = read(fds[0], buf + got, sizeof buf - 1 - got)) > 0)
		got += (size_t)r;
	close(fds[0]);
	buf[got] = '\0';
	int ws;
	while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0)
		return -EIO;
	while (got > 0 && buf[got - 1] == '\n')
		buf[--got] = '\0';
	char *last = strrchr(buf, '\n');
	const char *v = last ? last + 1 : buf;
	size_t vl = strnlen(v, vn - 1);
	memcpy(version, v, vl);
	version[vl] = '\0';
	return 0;
}

/* images/build-vm.sh IMAGE_DIR: the kernel and initramfs in IMAGE_DIR/vm. */
static int run_vm_script(const char *script, const char *image)
{
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		/* Its progress is for the operator: stderr, not our stdout. */
		dup2(2, 1);
		execl("/bin/sh", "sh", script, image, (char *)NULL);
		_exit(127);
	}
	int ws;
	while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(ws) && WEXITSTATUS(ws) == 0 ? 0 : -EIO;
}

static int write_manifest(const char *dir, const char *name, bool from_host,
			  const char *packages, const char *version, unsigned long long bytes)
{
	char path[PATH_MAX + 16], when[64];
	time_t now = time(NULL);
	strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
	json_t *pk = json_array();
	json_array_append_new(pk, json_string("python3"));
	if (packages) {
		char *copy = strdup(packages), *save = NULL;
		for (char *p = strtok_r(copy, ",", &save); p; p = strtok_r(NULL, ",", &save))
			json_array_append_new(pk, json_string(p));
		free(copy);
	}
	json_t *m = json_pack("{s:s, s:s, s:s, s:o, s:s, s:I}", "name", name, "created", when,
			      "source", from_host ? "host" : "debootstrap bookworm minbase",
			      "packages", pk, "python", version, "size_bytes", (json_int_t)bytes);
	snprintf(path, sizeof path, "%s/manifest.json", dir);
	int rc = m && json_dump_file(m, path, JSON_INDENT(2) | JSON_PRESERVE_ORDER) == 0 ? 0 : -EIO;
	json_decref(m);
	return rc;
}

/* Image NAME (in dir) into the engine, stamped with its build time. */
static int import_into_docker(const char *name, const char *dir, const char *socket, bool force)
{
	char path[PATH_MAX + 32], sock[108], repo[300];
	snprintf(path, sizeof path, "%s/manifest.json", dir);
	json_t *m = json_load_file(path, 0, NULL);
	const char *created = json_string_value(json_object_get(m, "created"));
	if (!created) {
		cli_error("image import: %s: no readable manifest (rebuild the image with --force)",
			  path);
		json_decref(m);
		return 1;
	}
	char stamp[128];
	snprintf(stamp, sizeof stamp, "%s", created);
	json_decref(m);
	struct aj_error err = {0};
	if (docker_socket_path(socket, sock, sizeof sock, &err)) {
		cli_error("image import: %s", err.message);
		return 1;
	}
	snprintf(repo, sizeof repo, "agentjail/%s", name);
	snprintf(path, sizeof path, "%s/root", dir);
	bool imported = false;
	double t0 = now_ms();
	if (docker_image_import(sock, path, repo, stamp, force, &imported, &err)) {
		cli_error("image import: %s", err.message);
		return 1;
	}
	if (imported)
		printf("imported image '%s' into the Docker Engine as %s:latest (%.1f s)\n", name,
		       repo, (now_ms() - t0) / 1000.0);
	else
		printf("the Docker Engine already has this build of '%s' as %s:latest (--force "
		       "imports it again)\n",
		       name, repo);
	return 0;
}

static int cmd_import(int argc, char **argv)
{
	const char *name = AJ_DEFAULT_IMAGE, *socket = NULL;
	bool force = false, named = false;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--force"))
			force = true;
		else if (!strcmp(argv[i], "--docker-socket") && i + 1 < argc)
			socket = argv[++i];
		else if (argv[i][0] != '-' && !named)
			name = argv[i], named = true;
		else {
			cli_error("image import: unexpected argument '%s'", argv[i]);
			fputs(usage, stderr);
			return EXIT_USAGE;
		}
	}
	if (!valid_name(name)) {
		cli_error("image import: '%s' is not a valid image name", name);
		return EXIT_USAGE;
	}
	char dir[PATH_MAX];
	snprintf(dir, sizeof dir, "%s/%s", images_dir(), name);
	struct stat st;
	if (stat(dir, &st) < 0) {
		cli_error("image import: no image '%s' in %s (agentjail image build --name %s "
			  "makes it)",
			  name, images_dir(), name);
		return 1;
	}
	return import_into_docker(name, dir, socket, force);
}

/* Named package sets, for what users commonly need. */
static const struct {
	const char *name;
	const char *packages;
} presets[] = {
	/* pip: docs/egress.md's `pip install` through an egress rule. */
	{"datascience", "python3-numpy,python3-pandas,python3-matplotlib,python3-pip"},
};

static int cmd_build(int argc, char **argv)
{
	const char *name = NULL, *packages = NULL, *preset = NULL;
	const char *socket = NULL;
	bool from_host = false, force = false, docker = false;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--docker"))
			docker = true;
		else if (!strcmp(argv[i], "--docker-socket") && i + 1 < argc)
			socket = argv[++i], docker = true;
		else if (!strcmp(argv[i], "--name") && i + 1 < argc)
			name = argv[++i];
		else if (!strcmp(argv[i], "--packages") && i + 1 < argc)
			packages = argv[++i];
		else if (!strcmp(argv[i], "--preset") && i + 1 < argc)
			preset = argv[++i];
		else if (!strcmp(argv[i], "--from-host"))
			from_host = true;
		else if (!strcmp(argv[i], "--force"))
			force = true;
		else {
			cli_error("image build: unexpected argument '%s'", argv[i]);
			fputs(usage, stderr);
			return EXIT_USAGE;
		}
	}
	char joined[1024];
	if (preset) {
		const char *set = NULL;
		for (size_t k = 0; k < sizeof presets / sizeof presets[0]; k++)
			if (!strcmp(preset, presets[k].name))
				set = presets[k].packages;
		if (!set) {
			cli_error("image build: unknown preset '%s' (datascience)", preset);
			return EXIT_USAGE;
		}
		snprintf(joined, sizeof joined, "%s%s%.900s", set, packages ? "," : "",
			 packages ? packages : "");
		packages = joined;
		if (!name)
			name = preset;
	}
	if (!name)
		name = AJ_DEFAULT_IMAGE;
	if (!valid_name(name)) {
		cli_error("image build: '%s' is not a valid image name (letters, digits, . _ -)",
			  name);
		return EXIT_USAGE;
	}
	if (packages && !valid_packages(packages)) {
		cli_error("image build: --packages '%s' is not a comma-separated list of Debian "
			  "package names",
			  packages);
		return EXIT_USAGE;
	}
	if (geteuid() != 0) {
		cli_error("image build: needs root (debootstrap, and an image owned by root)");
		return 1;
	}
	char script[PATH_MAX], vm_script[PATH_MAX];
	if (find_script("build-root.sh", script, sizeof script) ||
	    find_script("build-vm.sh", vm_script, sizeof vm_script)) {
		cli_error("image build: images/build-root.sh or build-vm.sh not found beside the "
			  "agentjail binary");
		return 1;
	}
	const char *images = images_dir();
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof cmd, "%s", images);
	/* mkdir -p of the images directory, root's and not group/world writable */
	for (char *p = cmd + 1; *p; p++)
		if (*p == '/') {
			*p = '\0';
			mkdir(cmd, 0755);
			*p = '/';
		}
	if (mkdir(images, 0755) < 0 && errno != EEXIST) {
		cli_error("image build: mkdir %s: %s", images, strerror(errno));
		return 1;
	}

	/* One build at a time; whatever a killed build left is ours to clean. */
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/.lock", images);
	int lock = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (lock < 0 || flock(lock, LOCK_EX) < 0) {
		cli_error("image build: lock %s: %s", path, strerror(errno));
		return 1;
	}
	DIR *d = opendir(images);
	struct dirent *de;
	while (d && (de = readdir(d)))
		if (!strncmp(de->d_name, ".build-", 7) || !strncmp(de->d_name, ".old-", 5)) {
			snprintf(path, sizeof path, "%s/%s", images, de->d_name);
			tree_remove(path);
		}
	if (d)
		closedir(d);

	char final[PATH_MAX];
	snprintf(final, sizeof final, "%s/%s", images, name);
	struct stat st;
	if (lstat(final, &st) == 0 && !force) {
		/* The root stays; the VM parts are brought up to date (the script
		 * rebuilds them only when an input changed). */
		int vrc = run_vm_script(vm_script, final);
		close(lock);
		if (vrc) {
			cli_error("image build: making the VM parts of '%s' failed (see above)", name);
			return 1;
		}
		printf("image '%s' is already built in %s (--force rebuilds it)\n", name, final);
		return docker ? import_into_docker(name, final, socket, false) : 0;
	}
	char tmp[PATH_MAX];
	snprintf(tmp, sizeof tmp, "%s/.build-%s-XXXXXX", images, name);
	if (!mkdtemp(tmp)) {
		cli_error("image build: mkdtemp in %s: %s", images, strerror(errno));
		close(lock);
		return 1;
	}
	chmod(tmp, 0755);
	char root[PATH_MAX + 8];
	snprintf(root, sizeof root, "%s/root", tmp);
	mkdir(root, 0755);
	fprintf(stderr, "agentjail: building image '%s' from %s...\n", name,
		from_host ? "this host's Python" : "the Debian repository (debootstrap)");
	char version[64] = "";
	int rc = run_script(script, from_host ? "host" : "debootstrap", root, packages, version,
			    sizeof version);
	if (!rc) {
		tree_bytes = 0;
		nftw(root, add_size, 64, FTW_PHYS | FTW_MOUNT);
		rc = write_manifest(tmp, name, from_host, packages, version, tree_bytes);
	}
	/* The microvm tier's kernel and initramfs, part of the same all-or-
	 * nothing build. */
	if (!rc && run_vm_script(vm_script, tmp))
		rc = -EIO;
	if (!rc) {
		char old[PATH_MAX];
		snprintf(old, sizeof old, "%s/.old-%s-%ld", images, name, (long)getpid());
		bool replacing = lstat(final, &st) == 0;
		if (replacing && rename(final, old) < 0)
			rc = -errno;
		else if (rename(tmp, final) < 0)
			rc = -errno;
		if (replacing && !rc)
			tree_remove(old);
	}
	if (rc) {
		tree_remove(tmp);
		cli_error("image build: building '%s' failed%s%s", name, rc == -EIO ? "" : ": ",
			  rc == -EIO ? " (see the messages above)" : strerror(-rc));
		close(lock);
		return 1;
	}
	close(lock);
	printf("built image '%s' in %s: Python %s, %.0f MiB\n", name, final, version,
	       (double)tree_bytes / (1024.0 * 1024.0));
	return docker ? import_into_docker(name, final, socket, force) : 0;
}

static int cmd_list(void)
{
	const char *images = images_dir();
	DIR *d = opendir(images);
	if (!d) {
		if (errno == ENOENT) {
			printf("no images in %s (agentjail image build makes one)\n", images);
			return 0;
		}
		cli_error("image list: %s: %s", images, strerror(errno));
		return 1;
	}
	printf("%-16s %-8s %9s  %-20s  %s\n", "NAME", "PYTHON", "SIZE", "CREATED", "SOURCE");
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char path[PATH_MAX];
		snprintf(path, sizeof path, "%s/%s/manifest.json", images, de->d_name);
		json_t *m = json_load_file(path, 0, NULL);
		if (!m) {
			printf("%-16s (no readable manifest.json)\n", de->d_name);
			continue;
		}
		printf("%-16s %-8s %7.0f MiB  %-20s  %s\n", de->d_name,
		       json_string_value(json_object_get(m, "python")) ?: "?",
		       (double)json_integer_value(json_object_get(m, "size_bytes")) / 1048576.0,
		       json_string_value(json_object_get(m, "created")) ?: "?",
		       json_string_value(json_object_get(m, "source")) ?: "?");
		json_decref(m);
	}
	closedir(d);
	return 0;
}

static int cmd_rm(const char *name)
{
	if (!valid_name(name)) {
		cli_error("image rm: '%s' is not a valid image name", name);
		return EXIT_USAGE;
	}
	const char *images = images_dir();
	char path[PATH_MAX], gone[PATH_MAX];
	snprintf(path, sizeof path, "%s/%s", images, name);
	snprintf(gone, sizeof gone, "%s/.old-%s-%ld", images, name, (long)getpid());
	/* Out of sight first, in one step; then deleted. */
	if (rename(path, gone) < 0) {
		if (errno == ENOENT)
			cli_error("image rm: no image '%s' in %s", name, images);
		else
			cli_error("image rm: %s: %s", path, strerror(errno));
		return 1;
	}
	int rc = tree_remove(gone);
	if (rc) {
		cli_error("image rm: removing %s: %s", gone, strerror(-rc));
		return 1;
	}
	printf("removed image '%s'\n", name);
	return 0;
}

static int cmd_list_args(int argc, char **argv)
{
	if (argc > 1) {
		cli_error("image list: unexpected argument '%s'", argv[1]);
		fputs(usage, stderr);
		return EXIT_USAGE;
	}
	return cmd_list();
}

static int cmd_rm_args(int argc, char **argv)
{
	if (argc != 2) {
		cli_error("image rm: give one NAME");
		fputs(usage, stderr);
		return EXIT_USAGE;
	}
	return cmd_rm(argv[1]);
}

/* The subcommands, in one table: tests/tree/test_help_docs.py reads it to
 * ask each one for --help. */
static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
} image_commands[] = {
	{"build", cmd_build},
	{"import", cmd_import},
	{"list", cmd_list_args},
	{"rm", cmd_rm_args},
};

int cmd_image(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		fputs(usage, argc < 2 ? stderr : stdout);
		return argc < 2 ? EXIT_USAGE : 0;
	}
	for (size_t i = 0; i < sizeof image_commands / sizeof image_commands[0]; i++) {
		if (strcmp(argv[1], image_commands[i].name))
			continue;
		/* --help anywhere among a subcommand's arguments is a request
		 * for its usage, never an image name or a mistake. */
		for (int k = 2; k < argc; k++)
			if (!strcmp(argv[k], "-h") || !strcmp(argv[k], "--help")) {
				fputs(usage, stdout);
				return 0;
			}
		/* A relative one was once ignored without a word: the image
		 * went to the default directory instead. */
		const char *d = getenv("AGENTJAIL_IMAGES");
		if (d && d[0] && d[0] != '/') {
			cli_error("image: AGENTJAIL_IMAGES must be an absolute path (it is '%s')", d);
			return EXIT_USAGE;
		}
		return image_commands[i].fn(argc - 1, argv + 1);
	}
	cli_error("image: unknown command '%s' (build, import, list, rm)", argv[1]);
	fputs(usage, stderr);
	return EXIT_USAGE;
}
