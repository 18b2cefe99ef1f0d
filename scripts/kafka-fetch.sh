#!/usr/bin/env bash
# Lays out the Kafka broker's runtime classpath in var/kafka/libs from Maven Central
# (there is no Debian package of the broker). Does nothing when the libs already match
# scripts/kafka/pom.xml.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

POM=$ROOT/scripts/kafka/pom.xml
LIBS=$TOOLS/kafka/libs
STAMP=$LIBS/.fetched

pom_prop() { sed -n "s:.*<$1>\(.*\)</$1>.*:\1:p" "$POM" | head -n 1; }
kafka_version=$(pom_prop kafka.version)
log4j_version=$(pom_prop log4j.version)
# The pom's hash, not only the versions, so that any edit (an exclusion, an extra
# artifact) refetches.
want="kafka_2.13-$kafka_version log4j-$log4j_version pom-$(sha256sum "$POM" | cut -c1-16)"

fetched() { [ -f "$LIBS/kafka_2.13-$kafka_version.jar" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$want" ]; }

fetched && exit 0
take_lock kafka-fetch "$TOOLS"
# Another caller may have done the same fetch while we waited for the lock.
fetched && exit 0
command -v mvn >/dev/null || die "mvn not found (run scripts/install-deps.sh)"
mkdir -p "$TOOLS/kafka"
# Copy into a scratch directory and swap it in whole: an interrupted fetch must not
# leave a half-filled libs directory that looks usable.
tmp=$(mktemp -d "$TOOLS/kafka/libs.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
if ! mvn -q -B -f "$POM" dependency:copy-dependencies \
       -DincludeScope=runtime -DoutputDirectory="$tmp" >"$TOOLS/kafka/fetch.log" 2>&1; then
  tail -n 40 "$TOOLS/kafka/fetch.log" >&2
  die "maven fetch of Kafka $kafka_version failed (log: var/kafka/fetch.log)"
fi
[ -f "$tmp/kafka_2.13-$kafka_version.jar" ] || die "maven did not deliver kafka_2.13-$kafka_version.jar"
echo "$want" >"$tmp/.fetched"
rm -rf "$LIBS"
mv -T "$tmp" "$LIBS"
trap - EXIT
echo "kafka-fetch: Kafka $kafka_version + log4j $log4j_version in var/kafka/libs ($(find "$LIBS" -name '*.jar' | wc -l) jars)"
