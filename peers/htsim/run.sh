#!/bin/sh
# fctlab side by side with htsim on the data-center permutation benchmark.
#
#   peers/htsim/run.sh HTSIM_CHECKOUT [K]
#
# Builds htsim's DCTCP permutation driver (sim/datacenter/old_tests/main_dctcp_permutation.cpp
# of Broadcom/csg-htsim) in a temporary copy, runs it on a k-ary fat-tree (K=8: 128 hosts,
# K=16: 1024) and runs fctlab's mirror of the same set-up (python/fctlab/benchmarks/
# fattree_k16_dctcp.toml with network.k = K: 10 Gbps, 1 us links, 9000 B packets, 100-packet
# buffers, ECN marking at 15 packets, DCTCP, one long-lived flow per host in a random
# permutation, 0.21 simulated seconds). Prints the whole-process wall time and peak memory of
# each. Run it on an otherwise idle machine; the temporary copy is removed at the end.
set -eu
SRC=${1:?usage: peers/htsim/run.sh HTSIM_CHECKOUT [K]}
K=${2:-8}
HERE=$(cd "$(dirname "$0")/../.." && pwd)
PY=${PY:-$HERE/.venv/bin/python}
[ -f "$SRC/sim/Makefile" ] || { echo "run.sh: $SRC is not a csg-htsim checkout (no sim/Makefile)" >&2; exit 2; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT INT TERM
cp -r "$SRC/sim" "$WORK/sim"
echo "building htsim in $WORK (about 90 s)" >&2
make -s -C "$WORK/sim" libhtsim.a >/dev/null 2>&1 || { echo "run.sh: building libhtsim.a failed" >&2; exit 1; }
(cd "$WORK/sim/datacenter" && make -s firstfit.o vl2_topology.o fat_tree_topology.o fat_tree_switch.o bcube_topology.o \
    connection_matrix.o oversubscribed_fat_tree_topology.o shortflows.o multihomed_fat_tree_topology.o star_topology.o >/dev/null 2>&1)
# The old driver defines ntoa/itoa that the library now defines too: let the linker take one.
# -O2 is the driver Makefile's own optimization level (the library is built with its -O3).
make -s -C "$WORK/sim/datacenter/old_tests" htsim_dctcp_permutation \
    CFLAGS="-std=c++11 -O2 -Wl,--allow-multiple-definition" >/dev/null 2>&1 \
    || { echo "run.sh: building htsim_dctcp_permutation failed" >&2; exit 1; }
NODES=$((K * K * K / 4))
cd "$WORK"
/usr/bin/time -f "htsim  k=$K: %e s wall, %M KB peak" ./sim/datacenter/old_tests/htsim_dctcp_permutation \
    -o "$WORK/htsim.log" -nodes "$NODES" -conns "$NODES" -q 100 > "$WORK/htsim.out"
"$PY" - "$K" "$WORK/fctlab.json" <<'PYEOF'
import json, sys
from fctlab.bench import scenario
k = int(sys.argv[1])
sc = scenario("fattree_k16_dctcp", quick=False, k=k)
json.dump(sc, open(sys.argv[2], "w"))
PYEOF
/usr/bin/time -f "fctlab k=$K: %e s wall, %M KB peak" "$PY" -c "import fctlab, json, sys; fctlab.run(json.load(open(sys.argv[1])))" "$WORK/fctlab.json"
