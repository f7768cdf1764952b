# agentjail — `make` builds, `make test` runs the tests (ASan/UBSan build),
# `make demo` installs what is missing, builds and runs the demo.
CC ?= cc
PKGS := libseccomp jansson libcares libssl libcrypto
CFLAGS_BASE := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wshadow -Wformat=2 \
	-Wstrict-prototypes -Wmissing-prototypes -Iinclude -fstack-protector-strong
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS = $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lm
CFLAGS ?= -O2 -g
# The Python of the binding's tests and bench: Debian's, which has the
# python3-cffi and python3-pytest that install-deps.sh installs (a python3
# earlier on PATH, pyenv's say, would not see them).
PYTHON ?= /usr/bin/python3
SAN := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all

# seccomp_policy.c is compiled into the build-time generator, not the library.
LIB_SRC := $(filter-out src/linux/seccomp_policy.c,$(wildcard src/core/*.c src/linux/*.c src/tiers/*.c src/vm/*.c src/docker/*.c src/gvisor/*.c src/attack/*.c src/boot/*.c src/egress/*.c src/api/*.c)) src/warm/warm.c
CLI_SRC := $(wildcard src/cli/*.c src/mcp/*.c)
# agentjail serve/keys/worker: a dynamically linked binary of its own (it
# loads an HTTP server, a Redis client, libcrypto and libcurl, for the
# completion webhooks), sharing the CLI's option parsing and the MCP server.
SERVE_SRC := $(wildcard src/serve/*.c src/serve/*/*.c) src/cli/options.c $(wildcard src/mcp/*.c)
SERVE_PKGS := libmicrohttpd hiredis libcrypto libcurl zlib
HDRS := $(wildcard include/*.h src/*/*.h src/serve/*/*.h tests/*.h)

B := build
T := build/test
LIB_OBJ := $(LIB_SRC:%.c=$(B)/obj/%.o)
CLI_OBJ := $(CLI_SRC:%.c=$(B)/obj/%.o)
TLIB_OBJ := $(LIB_SRC:%.c=$(T)/obj/%.o)
TCLI_OBJ := $(CLI_SRC:%.c=$(T)/obj/%.o)
SERVE_OBJ := $(SERVE_SRC:%.c=$(B)/obj/%.o)
TSERVE_OBJ := $(SERVE_SRC:%.c=$(T)/obj/%.o)
SERVE_CFLAGS = $(shell pkg-config --cflags $(SERVE_PKGS) 2>/dev/null)
SERVE_LIBS = $(shell pkg-config --libs $(SERVE_PKGS) 2>/dev/null)

.PHONY: all deps test test-loaded unit demo ts-client bench bench-microvm bench-docker bench-session bench-python bench-launcher bench-serve bench-e2b bench-clients bench-console clean examples
all: $(B)/agentjail $(B)/agentjail-serve $(B)/libagentjail.a $(B)/libagentjail.so $(B)/examples/hello

deps:
	@./scripts/install-deps.sh

# The seccomp filter, compiled from the policy once per build (see
# tools/gen_filter.c), and included by src/linux/seccomp.c.
GEN := $(B)/gen/seccomp_filter.inc
$(B)/gen_filter: tools/gen_filter.c src/linux/seccomp_policy.c src/linux/seccomp_policy.h
	@mkdir -p $(B)
	$(CC) $(CFLAGS_BASE) $(CFLAGS) -o $@ tools/gen_filter.c src/linux/seccomp_policy.c -lseccomp

$(GEN): $(B)/gen_filter
	@mkdir -p $(dir $@)
	$(B)/gen_filter > $@.tmp && mv $@.tmp $@

# The same policy as a Docker seccomp profile, for the docker tier.
DOCKER_GEN := $(B)/gen/docker_seccomp.inc
$(DOCKER_GEN): $(B)/gen_filter
	@mkdir -p $(dir $@)
	$(B)/gen_filter --docker > $@.tmp && mv $@.tmp $@

# The docker tier's PID 1 (src/boot/boot.py), as a C string.
BOOT_GEN := $(B)/gen/docker_boot.inc
$(BOOT_GEN): src/boot/boot.py tools/c_string.py
	@mkdir -p $(dir $@)
	python3 tools/c_string.py docker_boot_py < $< > $@.tmp && mv $@.tmp $@

# The program's launcher (src/core/launch.py), as a C string: process,
# container (jail_plan.c), docker and gvisor (boot.py's argv) start main.py with it,
# after the exit rules it shares with the session and the warm zygote
# (src/core/exit_rule.py).
LAUNCH_GEN := $(B)/gen/launch.inc
$(LAUNCH_GEN): src/core/exit_rule.py src/core/launch.py tools/c_string.py
	@mkdir -p $(dir $@)
	python3 tools/c_string.py launch_py --strip-comments src/core/exit_rule.py src/core/launch.py > $@.tmp && mv $@.tmp $@

# The session interpreter (src/core/repl.py), as a C string, after the
# SystemExit rule it shares with the warm zygote (src/core/exit_rule.py).
# After them, how node starts (src/core/node_flags.py) and the JavaScript
# interpreter it starts (src/core/repl.js, with src/core/ts_strip.js for
# TypeScript cells) as the string REPL_JS: a session's first JavaScript
# call starts node on it.
REPL_GEN := $(B)/gen/session_repl.inc
$(REPL_GEN): src/core/exit_rule.py src/core/node_flags.py src/core/repl.js src/core/ts_strip.js src/core/repl_state.py src/core/repl.py tools/c_string.py
	@mkdir -p $(dir $@)
	python3 tools/c_string.py --py-string REPL_JS src/core/repl.js src/core/ts_strip.js > $(B)/gen/repl_js.py.tmp && mv $(B)/gen/repl_js.py.tmp $(B)/gen/repl_js.py
	python3 tools/c_string.py session_repl_py src/core/exit_rule.py src/core/node_flags.py $(B)/gen/repl_js.py src/core/repl_state.py src/core/repl.py > $@.tmp && mv $@.tmp $@

# A one-shot JavaScript or TypeScript run's program (src/core/js_run.py
# after node_flags.py and src/core/ts_strip.js as the string TS_STRIP_JS),
# as a C string: src/api/language.c puts the code after it, and every tier
# runs it as a Python program.
JS_RUN_GEN := $(B)/gen/js_run.inc
$(JS_RUN_GEN): src/core/node_flags.py src/core/ts_strip.js src/core/js_run.py tools/c_string.py
	@mkdir -p $(dir $@)
	python3 tools/c_string.py --py-string TS_STRIP_JS src/core/ts_strip.js > $(B)/gen/ts_strip_js.py.tmp && mv $(B)/gen/ts_strip_js.py.tmp $(B)/gen/ts_strip_js.py
	python3 tools/c_string.py js_run_py src/core/node_flags.py $(B)/gen/ts_strip_js.py src/core/js_run.py > $@.tmp && mv $@.tmp $@

# Warm mode: the zygote (src/warm/zygote.py) as a C string, and the helper
# library it loads (src/warm/helper.c with the jail's code, libc only) as
# bytes. The helper is never built with the sanitizers: it is loaded into
# the zygote's Python, which has no sanitizer runtime.
ZYGOTE_GEN := $(B)/gen/warm_zygote.inc
$(ZYGOTE_GEN): src/core/exit_rule.py src/warm/zygote.py tools/c_string.py
	@mkdir -p $(dir $@)
	python3 tools/c_string.py warm_zygote_py src/core/exit_rule.py src/warm/zygote.py > $@.tmp && mv $@.tmp $@

HELPER_SRC := src/warm/helper.c src/linux/jail_plan.c src/linux/jail_init.c src/linux/jail_inside.c \
	src/linux/jail_root.c src/linux/jail_run.c src/linux/jail_session.c src/linux/jail_warm.c \
	src/linux/mounts.c src/linux/creds.c src/linux/egress_door.c src/linux/egress_listen.c \
	src/linux/rlimits.c src/linux/seccomp.c src/linux/spawn.c src/linux/report.c \
	src/linux/supervise.c src/linux/supervisor.c src/linux/cgroup.c src/linux/ns.c src/core/error.c \
	src/core/io.c src/core/capture.c src/core/result.c src/core/status.c src/core/utf8.c \
	src/core/keyed.c src/core/contract.c
HELPER_OBJ := $(HELPER_SRC:%.c=$(B)/helper-obj/%.o)
$(B)/helper-obj/%.o: %.c $(HDRS) $(GEN) $(REPL_GEN) $(LAUNCH_GEN)
	@mkdir -p $(dir $@)
	@echo "  CC/so   $<"
	@$(CC) $(CFLAGS_BASE) -O2 -g -fPIC -fvisibility=hidden -ffunction-sections -fdata-sections \
		$(PKG_CFLAGS) -I$(B)/gen -c $< -o $@
$(B)/warm-helper.so: $(HELPER_OBJ)
	$(CC) -shared -nodefaultlibs -Wl,--gc-sections -Wl,-z,defs -Wl,-z,relro,-z,now \
		-o $@ $(HELPER_OBJ) -lc
HELPER_GEN := $(B)/gen/warm_helper.inc
$(HELPER_GEN): $(B)/warm-helper.so tools/c_bytes.py
	python3 tools/c_bytes.py warm_helper_so < $< > $@.tmp && mv $@.tmp $@

# The gvisor tier's compatibility shim (src/gvisor/preload/no_automount.c,
# libc only, never sanitized: every program in the sandbox loads it), as
# bytes that src/gvisor/bundle.c writes into each sandbox's bundle.
$(B)/gvisor-preload.so: src/gvisor/preload/no_automount.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) -O2 -fPIC -shared -Wl,-z,defs -Wl,-z,relro,-z,now -o $@ $<
GVISOR_PRELOAD_GEN := $(B)/gen/gvisor_preload.inc
$(GVISOR_PRELOAD_GEN): $(B)/gvisor-preload.so tools/c_bytes.py
	python3 tools/c_bytes.py gvisor_preload_so < $< > $@.tmp && mv $@.tmp $@
$(B)/obj/src/gvisor/bundle.o $(T)/obj/src/gvisor/bundle.o: $(GVISOR_PRELOAD_GEN)

$(B)/obj/src/linux/jail_run.o $(T)/obj/src/linux/jail_run.o: $(LAUNCH_GEN)
$(B)/obj/src/linux/jail_session.o $(T)/obj/src/linux/jail_session.o: $(REPL_GEN)
$(B)/obj/src/warm/warm.o $(T)/obj/src/warm/warm.o: $(HELPER_GEN) $(ZYGOTE_GEN)
# The web console (ui/src, docs/console.md) and the xterm.js files it
# takes from npm, as C arrays that agentjail-serve serves at /ui.
UI_DEPS := ui/node_modules/.installed
$(UI_DEPS): ui/package.json
	cd ui && npm install --no-audit --no-fund --silent
	@touch $@
UI_FILES := $(wildcard ui/src/*.html ui/src/*.js ui/src/*.css)
UI_NPM := vendor/xterm.mjs=ui/node_modules/@xterm/xterm/lib/xterm.mjs \
	vendor/xterm.css=ui/node_modules/@xterm/xterm/css/xterm.css \
	vendor/addon-fit.mjs=ui/node_modules/@xterm/addon-fit/lib/addon-fit.mjs
UI_GEN := $(B)/gen/ui_assets.inc
$(UI_GEN): $(UI_FILES) $(UI_DEPS) tools/ui_assets.py
	@mkdir -p $(dir $@)
	python3 tools/ui_assets.py /ui/=ui/src/index.html \
		$(foreach f,$(filter-out ui/src/index.html,$(UI_FILES)),/ui/$(notdir $(f))=$(f)) \
		$(foreach f,$(UI_NPM),/ui/$(f)) > $@.tmp && mv $@.tmp $@
$(B)/obj/src/serve/ui/ui.o $(T)/obj/src/serve/ui/ui.o: $(UI_GEN)
$(B)/obj/src/vm/session_host.o $(T)/obj/src/vm/session_host.o: $(REPL_GEN)
$(B)/obj/src/boot/session.o $(T)/obj/src/boot/session.o: $(REPL_GEN)
$(B)/obj/src/api/language.o $(T)/obj/src/api/language.o: $(JS_RUN_GEN)
$(B)/obj/src/linux/seccomp.o $(T)/obj/src/linux/seccomp.o: $(GEN)
$(B)/obj/src/boot/spec.o $(T)/obj/src/boot/spec.o: $(DOCKER_GEN) $(BOOT_GEN) $(LAUNCH_GEN)

$(B)/obj/%.o: %.c $(HDRS)
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	@$(CC) $(CFLAGS_BASE) $(CFLAGS) -fPIC $(PKG_CFLAGS) $(if $(findstring src/serve/,$<),$(SERVE_CFLAGS)) -I$(B)/gen -c $< -o $@

$(T)/obj/%.o: %.c $(HDRS)
	@mkdir -p $(dir $@)
	@echo "  CC+SAN  $<"
	@$(CC) $(CFLAGS_BASE) -O1 -g $(SAN) $(PKG_CFLAGS) $(if $(findstring src/serve/,$<),$(SERVE_CFLAGS)) -I$(B)/gen -c $< -o $@

$(B)/libagentjail.a: $(LIB_OBJ)
	@mkdir -p $(B)
	rm -f $@ && ar rcs $@ $^

# The shared library, for bindings that load it (python/): the objects are
# position-independent (-fPIC, which static-pie is content with too), and
# only the aj_ API is exported (src/libagentjail.map), so the internals
# can neither clash with a host program's symbols nor be called from it.
# -z nodelete: the library starts detached threads (the sessions' reaper,
# the stream delivery) that outlive any call; a dlclose (Python's cffi
# closes it at interpreter exit) must not unmap code they will return to
# (seen: pytest ending by SIGSEGV at an address in the unmapped library).
$(B)/libagentjail.so.0: $(LIB_OBJ) src/libagentjail.map
	$(CC) $(CFLAGS) -shared -Wl,-soname,libagentjail.so.0 \
		-Wl,--version-script=src/libagentjail.map -Wl,-z,relro,-z,now,-z,defs,-z,nodelete \
		-o $@ $(LIB_OBJ) $(PKG_LIBS) -lpthread

$(B)/libagentjail.so: $(B)/libagentjail.so.0
	ln -sf libagentjail.so.0 $@

# The command is linked static-pie: no dynamic loading on every run (about
# 0.5 ms of a 10 ms run here), and ASLR is kept.
$(B)/agentjail: $(CLI_OBJ) $(B)/libagentjail.a
	$(CC) $(CFLAGS) -static-pie -o $@ $(CLI_OBJ) $(B)/libagentjail.a $(PKG_LIBS) -lpthread

# Linked dynamically: a daemon pays the loader once, and Debian keeps
# libmicrohttpd's and libcrypto's security fixes coming through the .so.
$(B)/agentjail-serve: $(SERVE_OBJ) $(B)/libagentjail.a
	$(CC) $(CFLAGS) -pie -Wl,-z,relro,-z,now -o $@ $(SERVE_OBJ) $(B)/libagentjail.a \
		$(SERVE_LIBS) $(PKG_LIBS) -lpthread

$(B)/examples/hello: examples/hello.c $(B)/libagentjail.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) $(CFLAGS) -o $@ $< $(B)/libagentjail.a $(PKG_LIBS)

# The test build: library and CLI under ASan/UBSan, cmocka test programs.
$(T)/libagentjail.a: $(TLIB_OBJ)
	@mkdir -p $(T)
	rm -f $@ && ar rcs $@ $^

$(T)/agentjail: $(TCLI_OBJ) $(T)/libagentjail.a
	$(CC) $(SAN) -o $@ $(TCLI_OBJ) $(T)/libagentjail.a $(PKG_LIBS) -lpthread

$(T)/agentjail-serve: $(TSERVE_OBJ) $(T)/libagentjail.a
	$(CC) $(SAN) -o $@ $(TSERVE_OBJ) $(T)/libagentjail.a $(SERVE_LIBS) $(PKG_LIBS) -lpthread

$(T)/test_%: tests/test_%.c $(wildcard tests/*.h) $(T)/libagentjail.a
	$(CC) $(CFLAGS_BASE) -O1 -g $(SAN) $(PKG_CFLAGS) -I. $(shell pkg-config --cflags cmocka) \
		-o $@ $< $(T)/libagentjail.a $(PKG_LIBS) $(shell pkg-config --libs cmocka) -lpthread

# The webhooks' own test links their sources and serve's libraries.
WEBHOOK_TOBJ := $(T)/obj/src/serve/webhook/webhook.o $(T)/obj/src/serve/webhook/webhook_url.o \
	$(T)/obj/src/serve/webhook/webhook_post.o $(T)/obj/src/serve/webhook/webhook_dest.o \
	$(T)/obj/src/serve/http/keys.o
$(T)/test_webhook: tests/test_webhook.c $(wildcard tests/*.h) $(WEBHOOK_TOBJ) $(T)/libagentjail.a
	$(CC) $(CFLAGS_BASE) -O1 -g $(SAN) $(PKG_CFLAGS) $(SERVE_CFLAGS) -I. \
		$(shell pkg-config --cflags cmocka) -o $@ $< $(WEBHOOK_TOBJ) $(T)/libagentjail.a \
		$(SERVE_LIBS) $(PKG_LIBS) $(shell pkg-config --libs cmocka) -lpthread

TESTS := $(patsubst tests/%.c,$(T)/%,$(wildcard tests/test_*.c))

$(B)/bench: bench/bench.c src/cli/measure.h
	@mkdir -p $(B)
	$(CC) $(CFLAGS_BASE) $(CFLAGS) -o $@ $< -lm

# Fuzzing (clang's libFuzzer, with ASan/UBSan): `make fuzz FUZZ_S=60` runs
# each target for FUZZ_S seconds over its corpus in fuzz/corpus/TARGET (seeded
# from the tests; what libFuzzer finds new is kept in build/fuzz/corpus, not
# in the repo). A crash, leak, timeout or out-of-memory stops the target and
# fails the make (its artifact is kept beside it, its log in
# build/fuzz/TARGET.log), and so does an artifact an earlier run left there.
# FUZZ_FLAGS go to every target. The paths are absolute: a target may change
# directory (fuzz_cli_options does).
FUZZ_S ?= 10
FUZZ_FLAGS ?=
FUZZ_CC ?= clang
FUZZ_SAN := -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all
FUZZ_TARGETS := $(patsubst fuzz/%.c,%,$(wildcard fuzz/fuzz_*.c))
FUZZ_LIB_SRC := $(LIB_SRC) $(wildcard src/mcp/*.c) src/cli/options.c src/cli/run.c src/cli/repl.c \
	src/cli/mcp.c src/vm/guest/frame.c src/vm/guest/failure.c
FUZZ_OBJ := $(FUZZ_LIB_SRC:%.c=$(B)/fuzz/obj/%.o)
$(B)/fuzz/obj/src/vm/guest/frame.o $(B)/fuzz/obj/src/vm/guest/failure.o: src/vm/guest/agent.h
$(B)/fuzz/obj/%.o: %.c $(HDRS) $(GEN) $(DOCKER_GEN) $(BOOT_GEN) $(REPL_GEN) $(ZYGOTE_GEN) $(HELPER_GEN) $(LAUNCH_GEN) $(JS_RUN_GEN)
	@mkdir -p $(dir $@)
	@$(FUZZ_CC) $(CFLAGS_BASE) -Wno-format-nonliteral -O1 -g $(FUZZ_SAN) $(PKG_CFLAGS) \
		-I$(B)/gen -c $< -o $@
$(B)/fuzz/%: fuzz/%.c $(FUZZ_OBJ)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CFLAGS_BASE) -O1 -g -I. -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=all -o $@ $< $(FUZZ_OBJ) $(PKG_LIBS) -lpthread

# (clang warns of vsnprintf in printf-like helpers that gcc, the build's
# -Werror gate, accepts with their format attributes.)
.SECONDARY: $(FUZZ_OBJ)
.PHONY: fuzz
fuzz: $(FUZZ_TARGETS:%=$(B)/fuzz/%)
	@for t in $(FUZZ_TARGETS); do \
		mkdir -p $(B)/fuzz/corpus/$$t; \
		echo "== fuzz $$t ($(FUZZ_S) s)"; \
		$(B)/fuzz/$$t -max_total_time=$(FUZZ_S) -print_final_stats=1 $(FUZZ_FLAGS) \
			-artifact_prefix=$(CURDIR)/$(B)/fuzz/$$t- $(CURDIR)/$(B)/fuzz/corpus/$$t \
			$(CURDIR)/fuzz/corpus/$$t >$(B)/fuzz/$$t.log 2>&1; rc=$$?; \
		grep -E '^(stat::number_of_executed_units|stat::new_units_added|#[0-9]+ *DONE)|ERROR|SUMMARY' \
			$(B)/fuzz/$$t.log; \
		for f in $(B)/fuzz/$$t-crash-* $(B)/fuzz/$$t-leak-* $(B)/fuzz/$$t-timeout-* \
			$(B)/fuzz/$$t-oom-*; do \
			if [ -e "$$f" ]; then echo "fuzz: $$t: $$f (see $(B)/fuzz/$$t.log)"; exit 1; fi; \
		done; \
		if [ $$rc -ne 0 ]; then echo "fuzz: $$t exited $$rc (see $(B)/fuzz/$$t.log)"; exit 1; fi; \
	done

# The container tier's tests run an image copied from this host's Python
# (no network); agentjail image build leaves an existing one as it is.
TEST_IMAGES := $(CURDIR)/build/images
# The MCP tests drive agentjail mcp with the official TypeScript SDK from npm.
MCP_DEPS := tests/mcp/node_modules/.installed
$(MCP_DEPS): tests/mcp/package.json
	cd tests/mcp && npm install --no-audit --no-fund --silent
	@touch $@
# The E2B-compatible API's tests drive it with E2B's own SDKs from npm.
E2B_DEPS := tests/e2b/node_modules/.installed
$(E2B_DEPS): tests/e2b/package.json
	cd tests/e2b && npm install --no-audit --no-fund --silent
	@touch $@

# The console's tests drive Debian's chromium with playwright-core from npm.
UI_TEST_DEPS := tests/ui/node_modules/.installed
$(UI_TEST_DEPS): tests/ui/package.json
	cd tests/ui && npm install --no-audit --no-fund --silent
	@touch $@

# The TypeScript client (clients/typescript) is built by its pinned
# TypeScript compiler from npm; its tests install the packed tarball.
TS_CLIENT := clients/typescript/dist/index.js
$(TS_CLIENT): clients/typescript/package.json clients/typescript/tsconfig.json $(wildcard clients/typescript/src/*.ts)
	cd clients/typescript && npm install --no-audit --no-fund --silent && npx tsc -p tsconfig.json
	@touch $@
ts-client: $(TS_CLIENT)

# The docker tier's tests run the same test image, imported into the engine
# (dockerd is started if none answers).
test: deps $(TESTS) $(T)/agentjail $(T)/agentjail-serve all $(MCP_DEPS) $(E2B_DEPS) $(UI_TEST_DEPS) $(TS_CLIENT)
	@AGENTJAIL_IMAGES=$(TEST_IMAGES) $(B)/agentjail image build --from-host --packages bash,coreutils,curl,nodejs,node-typescript --name test >/dev/null
	@AGENTJAIL_IMAGES=$(TEST_IMAGES) $(B)/agentjail image build --from-host --preset datascience --name test-ds >/dev/null
	@AGENTJAIL_IMAGES=$(TEST_IMAGES) $(B)/agentjail image build --from-host --packages python3-pip,python3-requests --name test-pip >/dev/null
	@./scripts/ensure-dockerd.sh
	@AGENTJAIL_IMAGES=$(TEST_IMAGES) $(B)/agentjail image import test >/dev/null
	@AGENTJAIL_IMAGES=$(TEST_IMAGES) $(B)/agentjail image import test-ds >/dev/null
	@PYTHON=$(PYTHON) ./scripts/run-tests.sh $(TESTS) tests/mcp/mcp.test.mjs tests/mcp/serve.test.mjs tests/e2b/e2b.test.mjs tests/ui/console.test.mjs tests/clients/ts_client.test.mjs python/tests tests/serve/ tests/deploy/ tests/tree/
	@echo "== make fuzz FUZZ_S=5 (each fuzz target briefly)"
	@$(MAKE) --no-print-directory fuzz FUZZ_S=5

# make test with two busy loops per core beside it (scripts/with-load.sh
# starts them and stops them by pid when the suite ends, whatever its
# result): a test that passes only on a quiet machine fails here.
test-loaded:
	@./scripts/with-load.sh $(MAKE) --no-print-directory test

# The demo runs every tier that works here; the container tier needs the
# default image, built from the Debian repository the first time (~40 s),
# and the session demo the datascience image (numpy, pandas, matplotlib).
# It ends with the attack matrix and the latency table (bench installs
# bubblewrap, a peer); an escape is shown, not turned into a failed demo.
demo: deps all
	@$(B)/agentjail image build
	@(./scripts/ensure-dockerd.sh && $(B)/agentjail image import >/dev/null) || \
		echo "demo: no Docker Engine here; the docker tier is left out" >&2
	@./scripts/demo.sh
	@echo; echo "== a session: upload, load, compute, chart (agentjail repl --json)"
	@$(B)/agentjail image build --preset datascience >/dev/null || \
		echo "demo: the datascience image could not be built; the session runs on the process tier" >&2
	@./scripts/demo-session.sh
	@./scripts/install-deps.sh bench
	@echo; echo "== agentjail attack: the hostile-program matrix"
	-@$(B)/agentjail attack
	@echo; echo "== agentjail attack --warm: the same, each run a fork of a zygote (warm mode)"
	-@$(B)/agentjail attack --warm --tier process --tier container
	@echo; echo "== agentjail bench: what each tier costs"
	@$(B)/agentjail bench --runs 20

bench: all $(B)/bench
	@./scripts/install-deps.sh bench
	@$(B)/bench

# The microvm tier's three regimes (cold boot, restore per run, warm pool),
# through the library; slow under TCG, so a target of its own.
$(B)/bench-microvm: bench/microvm.c src/cli/measure.h $(B)/libagentjail.a
	$(CC) $(CFLAGS_BASE) $(CFLAGS) -o $@ $< $(B)/libagentjail.a $(PKG_LIBS) -lpthread

bench-microvm: all $(B)/bench-microvm
	@$(B)/bench-microvm

# The docker tier beside `docker run --rm` with the same flags, and where
# its time goes; runs the default image, imported into the engine.
$(B)/bench-docker: bench/docker.c src/cli/measure.h $(B)/libagentjail.a $(DOCKER_GEN)
	$(CC) $(CFLAGS_BASE) $(CFLAGS) -I. -I$(B)/gen -o $@ $< $(B)/libagentjail.a $(PKG_LIBS) -lpthread

bench-docker: all $(B)/bench-docker
	@./scripts/ensure-dockerd.sh
	@$(B)/agentjail image build --docker >/dev/null
	@$(B)/bench-docker

# What a session saves an agent: a later cell against a fresh run, and an
# import-heavy cell, on the process and container tiers (the container
# runs the datascience image, built from Debian the first time).
$(B)/bench-session: bench/session.c src/cli/measure.h $(B)/libagentjail.a
	$(CC) $(CFLAGS_BASE) $(CFLAGS) -o $@ $< $(B)/libagentjail.a $(PKG_LIBS) -lpthread

bench-session: all $(B)/bench-session
	@$(B)/agentjail image build --preset datascience >/dev/null
	@$(B)/bench-session

# What the Python binding (python/) adds to a process-tier run of print(1),
# against the same library calls made from C (bench/binding.c).
$(B)/bench-binding-c: bench/binding.c src/cli/measure.h $(B)/libagentjail.a
	$(CC) $(CFLAGS_BASE) $(CFLAGS) -o $@ $< $(B)/libagentjail.a $(PKG_LIBS) -lpthread

bench-python: all $(B)/bench-binding-c
	@$(PYTHON) bench/binding.py

# What the launcher every cold run starts through costs beside bare Python,
# outside any sandbox (bench/launcher.py).
bench-launcher: $(LAUNCH_GEN)
	@$(PYTHON) bench/launcher.py

# What agentjail serve adds over a direct library run, and the queue's
# scaling from one worker to two (bench/serve.py; Redis on loopback).
bench-serve: all $(B)/bench-binding-c
	@$(PYTHON) bench/serve.py

# Time to first output through the E2B-compatible API, E2B's own SDK beside
# the v1 API by fetch and by curl (bench/e2b.mjs; the SDKs of tests/e2b).
# Time to first output through each remote way in (bench/clients.mjs): the
# process tier and the container tier, warm.
bench-clients: all $(E2B_DEPS) $(TS_CLIENT)
	@node bench/clients.mjs 40 --tier process --warm
	@AGENTJAIL_IMAGES=$(TEST_IMAGES) node bench/clients.mjs 40 --tier container --warm --image test
# The web console's first visit in headless chromium, and a run's cost
# through serve with it (SERVE_BEFORE=path/to/agentjail of a build without
# it adds that side by side).
bench-console: all $(UI_TEST_DEPS)
	@node tests/ui/bench_console.mjs 20
bench-e2b: bench-clients

# The soak (bench/soak*.c): SOAK_SEQ sequential runs and SOAK_CONC at
# concurrency 4 on one sandbox per tier, benign and hostile mixed, every
# outcome checked; then a census of what is left (processes, mounts,
# cgroups, containers, run directories, uid slot locks, the caller's fds),
# and the MCP server's memory over SOAK_MCP calls. Not part of make test.
# SOAK_TIERS: e.g. process,container,docker:500:200 (NAME[:SEQ[:CONC]]);
# empty: every tier available here, and warm mode of process and container.
# It runs the test image (built from this host's Python, as make test does).
SOAK_SEQ ?= 10000
SOAK_CONC ?= 1000
SOAK_MCP ?= 2000
SOAK_TIERS ?=
SOAK_UID_BASE ?= 2150000000
# The Docker Engine takes uids up to 2147483647 only.
SOAK_DOCKER_UID_BASE ?= 2145000000
SOAK_SRC := bench/soak.c bench/soak_programs.c bench/soak_census.c bench/soak_mcp.c
$(B)/soak: $(SOAK_SRC) bench/soak.h $(B)/libagentjail.a
	$(CC) $(CFLAGS_BASE) $(CFLAGS) $(PKG_CFLAGS) -o $@ $(SOAK_SRC) $(B)/libagentjail.a \
		$(PKG_LIBS) -lpthread

.PHONY: soak
soak: all $(B)/soak
	@AGENTJAIL_IMAGES=$(TEST_IMAGES) $(B)/agentjail image build --from-host --packages bash,coreutils,curl,nodejs,node-typescript --name test >/dev/null
	@(./scripts/ensure-dockerd.sh && AGENTJAIL_IMAGES=$(TEST_IMAGES) \
		$(B)/agentjail image import test >/dev/null) || \
		echo "soak: no Docker Engine here; the docker tier is left out" >&2
	@$(B)/soak --seq $(SOAK_SEQ) --conc $(SOAK_CONC) --mcp $(SOAK_MCP) \
		--uid-base $(SOAK_UID_BASE) --docker-uid-base $(SOAK_DOCKER_UID_BASE) --tiers '$(SOAK_TIERS)' \
		--image $(TEST_IMAGES)/test --docker-image agentjail/test --agentjail $(B)/agentjail

clean:
	rm -rf $(B)
