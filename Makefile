# Seckill: one non-recursive Makefile.
#   make            build the three binaries into build/
#   make run        install what is missing, start everything, create a demo sale
#   make test       the same set-up, then unit and integration tests (ASan + UBSan)
#   make fuzz       libFuzzer harnesses for request parsing, JSON and config (clang)
#   make chaos      one fault per scenario in a sale under load, I1-I6 after each (docs/chaos.md)
#   make bench      the flash-sale benchmark and its report (bench/README.md)
#   make up|down|status [CONF=FILE]

CC       ?= cc
BUILD    ?= build
CONF     ?= conf/seckill.conf
PKGS     := libevent libevent_pthreads hiredis rdkafka libcjson libmariadb libcrypto
SANITIZE ?= 0

CFLAGS_BASE := -std=c11 -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wformat=2 \
               -D_POSIX_C_SOURCE=200809L -Iinclude $(shell pkg-config --cflags $(PKGS) 2>/dev/null) \
               -DSK_LUA_DIR='"$(CURDIR)/schema/lua"'
ifeq ($(SANITIZE),1)
CFLAGS_OPT  := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
LDFLAGS_OPT := -fsanitize=address,undefined
else
CFLAGS_OPT  := -O2 -g
LDFLAGS_OPT :=
endif
CFLAGS  += $(CFLAGS_BASE) $(CFLAGS_OPT)
LDLIBS  += $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lm
LDFLAGS += $(LDFLAGS_OPT)

COMMON   := log clock textbuf config json jwt purchasetoken coupon ucoupon useevent parse orderno tokenbucket keys sha1 luascript orderevent db timeparse couponstore
SERVER   := server gateway auth metrics http httpparams queries coupons redisconn kafkaprod activity intmap reply marks reaper
CONSUMER := consumer consumermetrics batch persist
CTL      := ctl ctlcoupon ctlactivity ctlverify ctlstats

obj = $(addprefix $(BUILD)/obj/,$(addsuffix .o,$(1)))

BINS := $(BUILD)/seckill-server $(BUILD)/order-consumer $(BUILD)/seckillctl

.PHONY: all clean unit-tests up down status run test deps
all: $(BINS)

$(BUILD)/obj/%.o: src/%.c $(wildcard include/*.h) | $(BUILD)/obj
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/obj:
	mkdir -p $@

$(BUILD)/seckill-server: $(call obj,$(SERVER) $(COMMON))
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@
$(BUILD)/order-consumer: $(call obj,$(CONSUMER) $(COMMON))
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@
$(BUILD)/seckillctl: $(call obj,$(CTL) $(COMMON))
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

# ---- unit tests (cmocka) -------------------------------------------------------
UNIT_TESTS := $(patsubst test/unit/%.c,%,$(wildcard test/unit/test_*.c))
$(BUILD)/test/%: test/unit/%.c $(call obj,$(COMMON)) | $(BUILD)/obj
	@mkdir -p $(BUILD)/test
	$(CC) $(CFLAGS) $< $(call obj,$(COMMON)) $(LDFLAGS) $(LDLIBS) -lcmocka -o $@

unit-tests: $(addprefix $(BUILD)/test/,$(UNIT_TESTS))

# ---- fuzzing (libFuzzer, clang) --------------------------------------------------
#   make fuzz [FUZZ_SECONDS=60]   every test/fuzz/fuzz_*.c for FUZZ_SECONDS each, on a fresh
#                                 copy of its seed corpus; fails on any crash, leak or
#                                 sanitizer report and says where the reproducer is
#   make fuzz-smoke               the same for FUZZ_SMOKE_SECONDS each (part of make test)
# The modules under test are built again with clang into $(BUILD)/fuzz/obj: libFuzzer's
# coverage instrumentation is clang's, and the release objects must stay free of it.
FUZZ_CC            ?= clang
FUZZ_SECONDS       ?= 60
FUZZ_SMOKE_SECONDS ?= 10
FUZZ_TARGETS := $(patsubst test/fuzz/%.c,%,$(wildcard test/fuzz/fuzz_*.c))
FUZZ_MODULES := config json jwt purchasetoken parse coupon ucoupon useevent orderno orderevent timeparse httpparams
FUZZ_CFLAGS  := $(CFLAGS_BASE) -g -O1 -fno-omit-frame-pointer -fno-sanitize-recover=undefined
FUZZ_LDLIBS  := $(shell pkg-config --libs libevent libcjson libcrypto 2>/dev/null) -lm
fuzz_obj = $(addprefix $(BUILD)/fuzz/obj/,$(addsuffix .o,$(1)))

.PHONY: fuzz fuzz-smoke fuzz-build fuzz-coverage
$(BUILD)/fuzz/obj/%.o: src/%.c $(wildcard include/*.h) | $(BUILD)/fuzz/obj
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link,address,undefined -c $< -o $@

$(BUILD)/fuzz/obj:
	mkdir -p $@

$(BUILD)/fuzz/bin/%: test/fuzz/%.c $(call fuzz_obj,$(FUZZ_MODULES)) $(wildcard include/*.h)
	@mkdir -p $(BUILD)/fuzz/bin
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer,address,undefined $< $(call fuzz_obj,$(FUZZ_MODULES)) \
		$(FUZZ_LDLIBS) -o $@

# The objects are named here so that make keeps them (not intermediate files).
fuzz-build: $(call fuzz_obj,$(FUZZ_MODULES)) $(addprefix $(BUILD)/fuzz/bin/,$(FUZZ_TARGETS))

fuzz: fuzz-build
	FUZZ_DIR=$(BUILD)/fuzz bash test/fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_TARGETS)

fuzz-smoke: fuzz-build
	FUZZ_DIR=$(BUILD)/fuzz bash test/fuzz/run.sh $(FUZZ_SMOKE_SECONDS) $(FUZZ_TARGETS)

# make fuzz-coverage: the lines of src/ each harness's corpus reaches (the last make fuzz
# run's corpus, else the seeds), from a build with clang's source coverage instead of the
# sanitizers. Needs llvm-cov-14 and llvm-profdata-14 (Debian llvm-14).
FUZZ_COV_FLAGS := $(CFLAGS_BASE) -g -O0 -fprofile-instr-generate -fcoverage-mapping
$(BUILD)/fuzz/cov/obj/%.o: src/%.c $(wildcard include/*.h)
	@mkdir -p $(BUILD)/fuzz/cov/obj
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
	$(CC) $(CFLAGS) $< $(LDFLAGS) $(shell pkg-config --libs libevent 2>/dev/null) -o $@

.PHONY: bench
bench: deps all $(BENCH_BASELINE)
	BUILD=$(BUILD) bash bench/run.sh

# ---- chaos suite (docs/chaos.md) ---------------------------------------------------
#   make chaos    the release binaries in a sale under load while one component fails
#                 per scenario (kill -9, SIGTERM, Kafka or MariaDB stopped, Redis frozen
#                 or restarted); I1-I6 and seckillctl verify after each; the table is
#                 printed and written to build/chaos/report.md. Starts the services it
#                 needs and stops again those it started.
.PHONY: chaos
chaos: deps all
	CONF=$(CONF) bash test/chaos/run.sh

clean:
	rm -rf build

deps:
	bash scripts/install-deps.sh

up: deps all
	CONF=$(CONF) bash scripts/stack.sh up
down:
	CONF=$(CONF) bash scripts/stack.sh down
status:
	CONF=$(CONF) bash scripts/stack.sh status

run: deps all
	CONF=$(CONF) bash scripts/demo.sh

test: deps
	bash scripts/test.sh
