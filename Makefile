# Seckill: one non-recursive Makefile.
#   make            build the three binaries into build/
#   make run        install what is missing, start everything, create a demo sale
#   make test       the same set-up, then unit and integration tests (ASan + UBSan)
#   make fuzz       libFuzzer harnesses for request parsing, JSON and config (clang)
#   make chaos      one fault per scenario in a sale under load, I1-I6 after each (docs/chaos.md)
#   make bench      the flash-sale benchmark and its report (bench/README.md)
#   make bench-latency  the contended sale with delayed links to Redis and Kafka (hosts topology)
#   make soak       30 minutes of sales under load with chaos faults: flat lines? (docs/chaos.md)
#   make up|down|status|run [TOPOLOGY=single|cluster|hosts] [CONF=FILE]
#   make test-hosts the hosts topology up, a sale through both gateways, I1-I6, down
#   make chaos-hosts network partitions under load on the hosts topology (docs/chaos.md)
#   make install|uninstall [PREFIX=/usr/local] [DESTDIR=...]

CC       ?= cc
BUILD    ?= build
# TOPOLOGY picks the stack make up/down/status/run work on (docs/design.md: Topologies):
#   single   one of each (conf/seckill.conf), the default
#   cluster  a Redis Cluster (3 masters, 3 replicas), 3 Kafka nodes (replication factor 3),
#            2 gateways on one port, 2 consumers
#            (conf/cluster.conf; docs/scale-out.md)
#   hosts    the cluster topology with every process in a network namespace of its own,
#            each its own address on a bridge (root; scripts/hosts.sh writes
#            build/conf/hosts.conf from conf/cluster.conf; docs/scale-out.md)
# CONF=FILE replaces the topology's file.
TOPOLOGY ?= single
ifeq ($(filter single cluster hosts,$(TOPOLOGY)),)
$(error TOPOLOGY=$(TOPOLOGY): expected single, cluster or hosts)
endif
HOSTS_CONF := build/conf/hosts.conf
CONF     ?= $(if $(filter cluster,$(TOPOLOGY)),conf/cluster.conf,$(if $(filter hosts,$(TOPOLOGY)),$(HOSTS_CONF),conf/seckill.conf))
# make test and make chaos run on a stack of their own (test/conf/namespace.conf: other
# ports, data directory, database, topics, group), never on the one make run/up started;
# CONF=FILE on the command line picks another one for them too.
TEST_CONF := build/conf/test.conf
TEST_CLUSTER_CONF := build/conf/test-cluster.conf
# The second lane of make test's pytest run (scripts/test.sh).
TEST_CONF_2 := build/conf/test-2.conf
TEST_STACK_CONF := $(if $(filter command line,$(origin CONF)),$(CONF),$(TEST_CONF))
# make chaos TOPOLOGY=cluster: the cluster scenarios on the tests' own cluster.
CHAOS_STACK_CONF := $(if $(filter command line,$(origin CONF)),$(CONF),$(if $(filter cluster,$(TOPOLOGY)),$(TEST_CLUSTER_CONF),$(TEST_CONF)))
PKGS     := libevent libevent_pthreads hiredis rdkafka libcjson libmariadb libcrypto
SANITIZE ?= 0

# pkg_flags ARGS: `pkg-config ARGS`, asked when a recipe first needs it and then kept.
# Never while the Makefile is read: `make run` on a machine without the -dev packages
# installs them (the deps target) in the same invocation, after the Makefile was read,
# and its compiles and links must see them. A package pkg-config cannot find stops the
# build with its name instead of a link that fails on hundreds of undefined references.
empty    :=
space    := $(empty) $(empty)
pkg_key   = PKG_FLAGS_$(subst $(space),_,$(strip $(1)))
pkg_query = $(shell pkg-config $(1) 2>/dev/null || echo PKG_CONFIG_FAILED)
pkg_check = $(if $(filter PKG_CONFIG_FAILED,$(1)),$(error pkg-config $(2) failed: install the build packages with 'make deps' (scripts/install-deps.sh)),$(1))
pkg_flags = $(if $(filter undefined,$(origin $(call pkg_key,$(1)))),$(eval $(call pkg_key,$(1)) := $(call pkg_check,$(call pkg_query,$(1)),$(1))))$($(call pkg_key,$(1)))

CFLAGS_BASE = -std=c11 -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wformat=2 \
               -D_POSIX_C_SOURCE=200809L -Iinclude -DSK_LUA_DIR='"$(CURDIR)/schema/lua"'
# Each part is compiled with the headers of its own packages only, so that a boundary such
# as "the gateway never talks to MySQL" fails at the compile of the file that crosses it
# (mysql.h is not found), not at link time. Tests, tools and the fuzz builds see them all.
PKGS_common   := hiredis rdkafka libcjson
PKGS_gateway  := libevent hiredis rdkafka libcjson libcrypto
PKGS_consumer := libevent hiredis rdkafka libcjson libmariadb
PKGS_store    := hiredis libcjson libmariadb
PKGS_ctl      := hiredis libcjson libmariadb
PKGS_admin    := libevent hiredis libcjson libmariadb
CFLAGS_PKGS    = $(call pkg_flags,--cflags $(PKGS))
ifeq ($(SANITIZE),1)
CFLAGS_OPT  := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
LDFLAGS_OPT := -fsanitize=address,undefined
else
CFLAGS_OPT  := -O2 -g
LDFLAGS_OPT :=
endif
CFLAGS  += $(CFLAGS_BASE) $(CFLAGS_OPT)
LDLIBS_ALL = $(call pkg_flags,--libs $(PKGS)) -lm
LDFLAGS += $(LDFLAGS_OPT)

# One folder per part, each a static library; a binary links only the parts it needs:
#   common    config, logging, clock, JSON, Redis keys, Lua loading, order numbers, events
#   gateway   seckill-server: HTTP, async Redis, Kafka producer (never MySQL)
#   consumer  order-consumer: Kafka consumer group, batches, MySQL persistence
#   store     blocking MySQL code shared by the consumer and seckillctl
#   ctl       seckillctl
#   admin     seckill-admin: the admin HTTP API over ctl's commands (admin.port)
# Headers mirror the sources under include/<part>/; a part includes only its own headers,
# common's, and (consumer, ctl) store's.
PARTS := common gateway consumer store ctl admin
MAIN_gateway  := seckillserver
MAIN_consumer := orderconsumer
MAIN_ctl      := seckillctl
MAIN_admin    := seckilladmin

part_srcs = $(filter-out src/$(1)/$(MAIN_$(1)).c,$(wildcard src/$(1)/*.c))
part_objs = $(patsubst src/%.c,$(BUILD)/obj/%.o,$(call part_srcs,$(1)))
lib       = $(BUILD)/lib/lib$(1).a

# Libraries of each binary, in link order (a part before the parts it uses).
LIBS_SERVER   := $(call lib,gateway) $(call lib,common)
LIBS_CONSUMER := $(call lib,consumer) $(call lib,store) $(call lib,common)
LIBS_CTL      := $(call lib,ctl) $(call lib,store) $(call lib,common)
LIBS_ADMIN    := $(call lib,admin) $(LIBS_CTL)
LDLIBS_SERVER   = $(call pkg_flags,--libs libevent hiredis rdkafka libcjson libcrypto) -lm
LDLIBS_CONSUMER = $(call pkg_flags,--libs libevent libevent_pthreads hiredis rdkafka libcjson libmariadb) -lpthread -lm
LDLIBS_CTL      = $(call pkg_flags,--libs hiredis libcjson libmariadb) -lm
LDLIBS_ADMIN    = $(call pkg_flags,--libs libevent hiredis libcjson libmariadb) -lpthread -lm

BINS := $(BUILD)/seckill-server $(BUILD)/order-consumer $(BUILD)/seckillctl $(BUILD)/seckill-admin

.PHONY: all clean unit-tests integration-c-tests up down status run check test test-cluster deps
all: $(BINS)

# -MMD: each object depends on exactly the headers it includes.
define PART_OBJ
$(BUILD)/obj/$(1)/%.o: src/$(1)/%.c
	@mkdir -p $$(dir $$@)
	$$(CC) $$(CFLAGS) $$(call pkg_flags,--cflags $$(PKGS_$(1))) -MMD -MP -c $$< -o $$@
endef
$(foreach p,$(PARTS),$(eval $(call PART_OBJ,$(p))))

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)

define PART_LIB
$(call lib,$(1)): $(call part_objs,$(1))
	@mkdir -p $$(dir $$@)
	rm -f $$@
	$$(AR) rcs $$@ $$^
endef
$(foreach p,$(PARTS),$(eval $(call PART_LIB,$(p))))

# GET /openapi.yaml serves docs/openapi.yaml compiled into the gateway library, so that an
# installed binary needs no file beside it and always serves the contract of its own code.
$(BUILD)/gen/gateway/openapidoc.c: docs/openapi.yaml scripts/embed.sh
	@mkdir -p $(dir $@)
	bash scripts/embed.sh openapidoc $< gateway/openapidoc.h > $@.tmp && mv $@.tmp $@
$(BUILD)/obj/gen/gateway/openapidoc.o: $(BUILD)/gen/gateway/openapidoc.c include/gateway/openapidoc.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(call pkg_flags,--cflags $(PKGS_gateway)) -c $< -o $@
$(call lib,gateway): $(BUILD)/obj/gen/gateway/openapidoc.o

# /console/ serves src/admin/console/ compiled into the admin library, for the same reason.
CONSOLE_FILES := $(sort $(wildcard src/admin/console/*))
$(BUILD)/gen/admin/consoleassets.c: $(CONSOLE_FILES) scripts/embedconsole.sh scripts/embed.sh
	@mkdir -p $(dir $@)
	bash scripts/embedconsole.sh $(CONSOLE_FILES) > $@.tmp && mv $@.tmp $@
$(BUILD)/obj/gen/admin/consoleassets.o: $(BUILD)/gen/admin/consoleassets.c include/admin/adminconsole.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(call pkg_flags,--cflags $(PKGS_admin)) -c $< -o $@
$(call lib,admin): $(BUILD)/obj/gen/admin/consoleassets.o

$(BUILD)/seckill-server: $(BUILD)/obj/gateway/seckillserver.o $(LIBS_SERVER)
	$(CC) $(LDFLAGS) $^ $(LDLIBS_SERVER) -o $@
$(BUILD)/order-consumer: $(BUILD)/obj/consumer/orderconsumer.o $(LIBS_CONSUMER)
	$(CC) $(LDFLAGS) $^ $(LDLIBS_CONSUMER) -o $@
$(BUILD)/seckillctl: $(BUILD)/obj/ctl/seckillctl.o $(LIBS_CTL)
	$(CC) $(LDFLAGS) $^ $(LDLIBS_CTL) -o $@
$(BUILD)/seckill-admin: $(BUILD)/obj/admin/seckilladmin.o $(LIBS_ADMIN)
	$(CC) $(LDFLAGS) $^ $(LDLIBS_ADMIN) -o $@

# ---- unit tests (cmocka): test/unit/<part>/test_*.c, linked with that part's libraries --
UNIT_TESTS := $(patsubst test/unit/%.c,%,$(wildcard test/unit/*/test_*.c))
UNIT_LIBS_common   := $(call lib,common)
UNIT_LIBS_gateway  := $(LIBS_SERVER)
UNIT_LIBS_consumer := $(LIBS_CONSUMER)
UNIT_LIBS_store    := $(call lib,store) $(call lib,common)
UNIT_LIBS_ctl      := $(LIBS_CTL)
UNIT_LIBS_admin    := $(LIBS_ADMIN)
UNIT_LDLIBS_common   = $(LDLIBS_ALL)
UNIT_LDLIBS_gateway  = $(LDLIBS_SERVER)
UNIT_LDLIBS_consumer = $(LDLIBS_CONSUMER)
UNIT_LDLIBS_store    = $(LDLIBS_ALL)
UNIT_LDLIBS_ctl      = $(LDLIBS_CTL)
UNIT_LDLIBS_admin    = $(LDLIBS_ADMIN)
test_part = $(word 1,$(subst /, ,$(1)))

define UNIT_TEST
$(BUILD)/test/$(1): test/unit/$(1).c $(UNIT_LIBS_$(call test_part,$(1)))
	@mkdir -p $$(dir $$@)
	$$(CC) $$(CFLAGS) $$(CFLAGS_PKGS) -MMD -MP $$< $(UNIT_LIBS_$(call test_part,$(1))) $$(LDFLAGS) $$(UNIT_LDLIBS_$(call test_part,$(1))) -lcmocka -o $$@
endef
$(foreach t,$(UNIT_TESTS),$(eval $(call UNIT_TEST,$(t))))
# A test rebuilds when a header it includes changes (test/unit/fakeredis.h among them).
-include $(shell find $(BUILD)/test -name '*.d' 2>/dev/null)

unit-tests: $(addprefix $(BUILD)/test/,$(UNIT_TESTS))

# ---- install (docs/operations.md: Install) ------------------------------------------------
#   make install [PREFIX=/usr/local] [DESTDIR=...]   binaries, Lua scripts, schema, config
#                                                    and systemd units (scripts/install.sh)
#   make uninstall [PREFIX=...] [DESTDIR=...]        exactly what that install put there
# The config goes to PREFIX/etc/seckill, or /etc/seckill when PREFIX is /usr.
PREFIX     ?= /usr/local
DESTDIR    ?=
BINDIR     ?= $(PREFIX)/bin
DATADIR    ?= $(PREFIX)/share/seckill
SYSCONFDIR ?= $(if $(filter /usr,$(PREFIX)),/etc,$(PREFIX)/etc)
UNITDIR    ?= $(PREFIX)/lib/systemd/system
INSTALL_BUILD := $(BUILD)/install
from_bindir = $(shell realpath -m --relative-to=$(BINDIR) $(1))
# The installed binaries find their Lua scripts and config relative to their own
# directory (so a tree staged under DESTDIR runs too), else at the absolute paths.
INSTALL_DEFS = -USK_LUA_DIR -DSK_LUA_DIR='"$(DATADIR)/lua"' \
                -DSK_CONF_FILE='"$(SYSCONFDIR)/seckill/seckill.conf"' \
                -DSK_INSTALL_LUA_FROM_BIN='"$(call from_bindir,$(DATADIR)/lua)"' \
                -DSK_INSTALL_CONF_FROM_BIN='"$(call from_bindir,$(SYSCONFDIR)/seckill/seckill.conf)"'
INSTALL_ENV = DESTDIR='$(DESTDIR)' BINDIR='$(BINDIR)' DATADIR='$(DATADIR)' \
              SYSCONFDIR='$(SYSCONFDIR)' UNITDIR='$(UNITDIR)' INSTALL_BUILD='$(INSTALL_BUILD)'

.PHONY: install uninstall install-bins
# Only config.c differs from the build tree's binaries: compiled again for the layout
# (every time, PREFIX may have changed) and linked ahead of the libraries, so that the
# linker never pulls libcommon.a's own config.o.
install-bins: $(BUILD)/obj/gateway/seckillserver.o $(BUILD)/obj/consumer/orderconsumer.o $(BUILD)/obj/ctl/seckillctl.o \
              $(BUILD)/obj/admin/seckilladmin.o $(LIBS_SERVER) $(LIBS_CONSUMER) $(LIBS_ADMIN)
	@mkdir -p $(INSTALL_BUILD)
	$(CC) $(CFLAGS) $(call pkg_flags,--cflags $(PKGS_common)) $(INSTALL_DEFS) -c src/common/config.c -o $(INSTALL_BUILD)/config.o
	$(CC) $(LDFLAGS) $(BUILD)/obj/gateway/seckillserver.o $(INSTALL_BUILD)/config.o $(LIBS_SERVER) $(LDLIBS_SERVER) -o $(INSTALL_BUILD)/seckill-server
	$(CC) $(LDFLAGS) $(BUILD)/obj/consumer/orderconsumer.o $(INSTALL_BUILD)/config.o $(LIBS_CONSUMER) $(LDLIBS_CONSUMER) -o $(INSTALL_BUILD)/order-consumer
	$(CC) $(LDFLAGS) $(BUILD)/obj/ctl/seckillctl.o $(INSTALL_BUILD)/config.o $(LIBS_CTL) $(LDLIBS_CTL) -o $(INSTALL_BUILD)/seckillctl
	$(CC) $(LDFLAGS) $(BUILD)/obj/admin/seckilladmin.o $(INSTALL_BUILD)/config.o $(LIBS_ADMIN) $(LDLIBS_ADMIN) -o $(INSTALL_BUILD)/seckill-admin

install: deps install-bins
	$(INSTALL_ENV) bash scripts/install.sh install
uninstall:
	$(INSTALL_ENV) bash scripts/install.sh uninstall

# ---- C integration tests (cmocka against the real services): test/integration/c/ ------
ITEST_C := $(patsubst test/integration/c/%.c,%,$(wildcard test/integration/c/test_*.c))
# The consumer's and the store's libraries too (test_persist_race drives persist_batch);
# a test links only the objects it uses.
$(BUILD)/itest/%: test/integration/c/%.c $(LIBS_CONSUMER)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(CFLAGS_PKGS) $< $(LIBS_CONSUMER) $(LDFLAGS) $(LDLIBS_ALL) -lcmocka -o $@
# The tests of the Redis scripts share luatest.c (a Redis, the scripts, a sale per test).
$(BUILD)/itest/test_lua_%: test/integration/c/test_lua_%.c test/integration/c/luatest.c \
                           test/integration/c/luatest.h $(LIBS_CONSUMER)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(CFLAGS_PKGS) $< test/integration/c/luatest.c $(LIBS_CONSUMER) $(LDFLAGS) $(LDLIBS_ALL) \
	    -lcmocka -o $@

integration-c-tests: $(addprefix $(BUILD)/itest/,$(ITEST_C))

# ---- fuzzing (libFuzzer, clang) --------------------------------------------------
#   make fuzz [FUZZ_SECONDS=60]   every test/fuzz/fuzz_*.c for FUZZ_SECONDS each, on a fresh
#                                 copy of its seed corpus; fails on any crash, leak or
#                                 sanitizer report and says where the reproducer is
#   make fuzz-smoke               the same for FUZZ_SMOKE_SECONDS each (part of make test)
# The modules under test are built again with clang into $(BUILD)/fuzz/obj: libFuzzer's
# coverage instrumentation is clang's, and the release objects must stay free of it.
FUZZ_CC            ?= clang
FUZZ_SECONDS       ?= 60
FUZZ_SMOKE_SECONDS ?= 5
# Harnesses run at a time (make test runs them on every core).
FUZZ_JOBS          ?= 1
FUZZ_TARGETS := $(patsubst test/fuzz/%.c,%,$(wildcard test/fuzz/fuzz_*.c))
FUZZ_MODULES := common/config common/configline common/slotmap common/redisslot common/json common/parse common/couponterms common/usercoupon common/redeemevent \
                common/orderno common/orderevent common/holder common/bucket common/timeparse gateway/jwt gateway/purchasetoken gateway/httpparams \
                gateway/multipart
FUZZ_CFLAGS  = $(CFLAGS_BASE) $(CFLAGS_PKGS) -g -O1 -fno-omit-frame-pointer -fno-sanitize-recover=undefined
FUZZ_LDLIBS  = $(call pkg_flags,--libs libevent libcjson libcrypto) -lm
fuzz_obj = $(addprefix $(BUILD)/fuzz/obj/,$(addsuffix .o,$(1)))

.PHONY: fuzz fuzz-smoke fuzz-build fuzz-coverage
$(BUILD)/fuzz/obj/%.o: src/%.c $(wildcard include/*/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link,address,undefined -c $< -o $@

$(BUILD)/fuzz/bin/%: test/fuzz/%.c $(call fuzz_obj,$(FUZZ_MODULES)) $(wildcard include/*/*.h)
	@mkdir -p $(BUILD)/fuzz/bin
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer,address,undefined $< $(call fuzz_obj,$(FUZZ_MODULES)) \
		$(FUZZ_LDLIBS) -o $@

# The objects are named here so that make keeps them (not intermediate files).
fuzz-build: $(call fuzz_obj,$(FUZZ_MODULES)) $(addprefix $(BUILD)/fuzz/bin/,$(FUZZ_TARGETS))

fuzz: fuzz-build
	FUZZ_JOBS=$(FUZZ_JOBS) FUZZ_DIR=$(BUILD)/fuzz bash test/fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_TARGETS)

fuzz-smoke: fuzz-build
	FUZZ_JOBS=$(FUZZ_JOBS) FUZZ_DIR=$(BUILD)/fuzz bash test/fuzz/run.sh $(FUZZ_SMOKE_SECONDS) $(FUZZ_TARGETS)

# make fuzz-coverage: the lines of src/ each harness's corpus reaches (the last make fuzz
# run's corpus, else the seeds), from a build with clang's source coverage instead of the
# sanitizers. Needs llvm-cov-14 and llvm-profdata-14 (Debian llvm-14).
FUZZ_COV_FLAGS = $(CFLAGS_BASE) $(CFLAGS_PKGS) -g -O0 -fprofile-instr-generate -fcoverage-mapping
$(BUILD)/fuzz/cov/obj/%.o: src/%.c $(wildcard include/*/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_COV_FLAGS) -c $< -o $@
$(BUILD)/fuzz/cov/bin/%: test/fuzz/%.c $(addprefix $(BUILD)/fuzz/cov/obj/,$(addsuffix .o,$(FUZZ_MODULES)))
	@mkdir -p $(BUILD)/fuzz/cov/bin
	$(FUZZ_CC) $(FUZZ_COV_FLAGS) -fsanitize=fuzzer $< $(addprefix $(BUILD)/fuzz/cov/obj/,$(addsuffix .o,$(FUZZ_MODULES))) \
		$(FUZZ_LDLIBS) -o $@
fuzz-coverage: $(addprefix $(BUILD)/fuzz/cov/obj/,$(addsuffix .o,$(FUZZ_MODULES))) $(addprefix $(BUILD)/fuzz/cov/bin/,$(FUZZ_TARGETS))
	FUZZ_DIR=$(BUILD)/fuzz bash test/fuzz/coverage.sh $(FUZZ_TARGETS)

# ---- benchmark (bench/README.md) -------------------------------------------------
#   make bench    release build, the stack with bench/conf/bench.conf, every scenario,
#                 bench/results/<UTC time>.{md,json,png} and latest.{md,json,png}
BENCH_BASELINE := $(BUILD)/bench/baseline

$(BENCH_BASELINE): bench/baseline.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< $(LDFLAGS) $(call pkg_flags,--libs libevent) -o $@

BENCH_OPENLOOP := $(BUILD)/bench/openloop
$(BENCH_OPENLOOP): bench/openloop.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< $(LDFLAGS) $(call pkg_flags,--libs libevent) -o $@

# The delay proxy of make bench-latency (no library: epoll and the C library only).
BENCH_DELAYPROXY := $(BUILD)/bench/delayproxy
$(BENCH_DELAYPROXY): bench/delayproxy.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< $(LDFLAGS) -o $@

# make bench TOPOLOGY=hosts is make bench-latency: the hosts topology's benchmark.
.PHONY: bench
ifeq ($(TOPOLOGY),hosts)
bench: bench-latency
else
bench: deps all $(BENCH_BASELINE) $(BENCH_OPENLOOP)
	BUILD=$(BUILD) bash bench/run.sh
endif

#   make bench-latency  the contended sale on the hosts topology (root) with 0, 0.5 and 2 ms
#                 added to each round trip between the gateways and Redis and Kafka
#                 (bench/delayproxy.c in each gateway's namespace), beside the loopback
#                 cluster's figures: bench/results/latency-<UTC time>.md (bench/README.md)
.PHONY: bench-latency
bench-latency: deps all $(BENCH_DELAYPROXY)
	BUILD=$(BUILD) python3 bench/latency.py

# ---- soak (docs/chaos.md: The soak) ---------------------------------------------------
#   make soak     sales one after another at half the measured maximum for SOAK_MINUTES
#                 (30), a chaos fault every SOAK_FAULT_SECONDS (240); RSS, descriptors,
#                 Redis memory and Kafka lag over time and I1-I6 per sale in
#                 build/soak/<UTC time>/report.md. SOAK_CONF=FILE: the stack (default
#                 conf/seckill.conf + bench/conf/bench.conf, as make bench). Starts the
#                 services it needs and stops again those it started.
.PHONY: soak
soak: deps all $(BENCH_OPENLOOP)
	PY=$$(bash scripts/venv.sh) && SECKILL_BIN=$(abspath $(BUILD)) "$$PY" bench/soak.py

# ---- chaos suite (docs/chaos.md) ---------------------------------------------------
#   make chaos [TOPOLOGY=cluster|hosts]
#                 the release binaries in a sale under load while one component fails
#                 per scenario (kill -9, SIGTERM, Kafka or MariaDB stopped, Redis frozen
#                 or restarted); I1-I6 and seckillctl verify after each; the table is
#                 printed and written to build/chaos/report.md. Starts the services it
#                 needs and stops again those it started. TOPOLOGY=hosts: make chaos-hosts.
.PHONY: chaos
ifeq ($(TOPOLOGY),hosts)
chaos: chaos-hosts
else
chaos: deps all $(BENCH_OPENLOOP) $(TEST_CONF) $(TEST_CLUSTER_CONF)
	CONF=$(CHAOS_STACK_CONF) TOPOLOGY=$(TOPOLOGY) bash test/chaos/run.sh
endif

$(TEST_CONF): conf/seckill.conf test/conf/namespace.conf
	@mkdir -p $(dir $@)
	cat $^ > $@
$(TEST_CONF_2): conf/seckill.conf test/conf/namespace-2.conf
	@mkdir -p $(dir $@)
	cat $^ > $@
$(TEST_CLUSTER_CONF): conf/cluster.conf test/conf/cluster-namespace.conf
	@mkdir -p $(dir $@)
	cat $^ > $@

# ---- make help: every target, one line each (test_makefile.py checks none is missing) --
define HELP
make [all]          build seckill-server, order-consumer, seckillctl, seckill-admin into build/
make run            install what is missing, start the stack, create a demo sale, print curl lines
make up|down|status the stack alone [TOPOLOGY=single|cluster|hosts] [CONF=FILE]
make check          line length, unit tests (cmocka, ASan+UBSan) and the tests that need no service: seconds
make test           the suite on its own stacks: unit, C integration, fuzz smoke, pytest in two lanes, chaos
make test-cluster   the integration tests on the tests' Redis and Kafka cluster (.ci/run runs both)
make test-hosts     the hosts topology (a namespace per process) up, a sale over both gateways, I1-I6, down
make chaos-hosts    network partitions under load on the hosts topology, I1-I6 after each [HOSTS_DELAY_US=N]
make chaos          one fault per scenario in a sale under load, invariants after each [TOPOLOGY=cluster|hosts]
make bench          the benchmark and its report in bench/results/ [TOPOLOGY=hosts: make bench-latency]
make bench-latency  the contended sale on the hosts topology with 0.5 and 2 ms added per round trip (root)
make soak           30 min of sales at half the maximum with chaos faults: RSS, fds, memory, lag over time
make fuzz           libFuzzer harnesses for FUZZ_SECONDS each (clang)
make fuzz-smoke     the same harnesses for FUZZ_SMOKE_SECONDS each (part of make test)
make fuzz-build     build the harnesses only
make fuzz-coverage  the source lines each harness's corpus reaches (llvm-14)
make install        binaries, Lua scripts, schema, config, systemd units [PREFIX=/usr/local] [DESTDIR=]
make uninstall      exactly what make install put there
make install-bins   link the binaries for the install layout only (part of make install)
make unit-tests     build the cmocka unit tests only (into BUILD/test)
make integration-c-tests  build the C integration tests only (into BUILD/itest)
make deps           install the Debian packages the build, the services and the tests need
make clean          remove build/ (var/, the stacks' data, stays)
make help           this list
endef
export HELP
.PHONY: help
help:
	@printf '%s\n' "$$HELP"

clean:
	rm -rf build

# INSTALL_DEPS: what `make deps` runs; the Makefile's own test replaces it
# (test/integration/test_makefile.py).
INSTALL_DEPS ?= bash scripts/install-deps.sh
# make test adds the browser its console tests drive (test/integration/test_console.py).
DEPS_FLAGS ?=
deps:
	$(INSTALL_DEPS) $(DEPS_FLAGS)
test: DEPS_FLAGS = --browser

# TOPOLOGY=hosts goes through scripts/hosts.sh, which makes (and removes) the namespaces
# around stack.sh; its configuration is the one hosts.sh writes (CONF=FILE: written there).
# The demo starts the single and cluster stacks itself; the hosts one needs its
# namespaces first.
ifeq ($(TOPOLOGY),hosts)
STACK_SH := HOSTS_CONF=$(CONF) bash scripts/hosts.sh
RUN_FIRST := $(STACK_SH) up
else
STACK_SH := CONF=$(CONF) bash scripts/stack.sh
RUN_FIRST :=
endif
up: deps all
	$(STACK_SH) up
down:
	$(STACK_SH) down
status:
	$(STACK_SH) status

run: deps all
	$(RUN_FIRST)
	CONF=$(CONF) bash scripts/demo.sh

check: deps $(TEST_CONF) $(TEST_CONF_2) $(TEST_CLUSTER_CONF)
	CONF=$(TEST_STACK_CONF) bash scripts/check.sh

test: deps $(TEST_CONF) $(TEST_CONF_2) $(TEST_CLUSTER_CONF)
	CONF=$(TEST_STACK_CONF) CONF_2=$(TEST_CONF_2) bash scripts/test.sh

test-cluster: deps $(TEST_CONF) $(TEST_CLUSTER_CONF)
	CONF=$(TEST_STACK_CONF) bash scripts/test-cluster.sh

# make test-hosts: test/hosts/ (root): the hosts topology of its own configuration
# (build/hosts-test/), a sale over both gateways from the client namespace, I1-I6 and
# verify, down, and no sk-* namespace, veth or bridge left.
# make chaos-hosts: the partition scenarios of test/hosts/test_partitions.py on the same
# topology (docs/chaos.md, "Partitions on the hosts topology"): some ten minutes, so not
# part of test-hosts. The session's end brings the topology down, as for test-hosts.
# HOSTS_DELAY_US=N: the partitions with N us added each way between the gateways and the
# Redis nodes and brokers (scripts/hosts.sh delay); the table goes to
# build/hosts-test/partitions-Nus/.
HOSTS_DELAY_US ?= 0
.PHONY: test-hosts chaos-hosts
test-hosts: deps all $(BENCH_OPENLOOP) $(BENCH_DELAYPROXY)
	PY=$$(bash scripts/venv.sh) && HOSTS_DELAY_US=0 SECKILL_BIN=$(abspath $(BUILD)) "$$PY" -m pytest -q \
	  -p no:cacheprovider --ignore=test/hosts/test_partitions.py test/hosts
chaos-hosts: deps all $(BENCH_OPENLOOP) $(BENCH_DELAYPROXY)
	PY=$$(bash scripts/venv.sh) && HOSTS_DELAY_US=$(HOSTS_DELAY_US) SECKILL_BIN=$(abspath $(BUILD)) "$$PY" -m pytest \
	  -q -rA -p no:cacheprovider test/hosts/test_partitions.py
