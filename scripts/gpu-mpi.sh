#!/usr/bin/env bash
# rtcgc tune under MPI on one machine of several GPUs (issue 38), in one call, from the repository
# root with .gpu/ beside it (scripts/gpu-pack.sh, then scripts/gpu-pack-mpi.sh for the MPI
# runtime). One rank per GPU. Measures, each with R ranks (every GPU) against 1:
#   1. a manifest of the examples at examples/sizes.txt's sizes (30 keys): wall time, winners
#      (RTCG_MPI_BUDGET candidates a key, default 16; RTCG_MPI_WARMUP=1 runs it once first, not
#      counted; RTCG_MPI_BIND=1 binds each rank to its share of the cores as in part 5, the one
#      rank too; RTCG_MPI_ONE_TWICE=1 runs the one rank again after, for the search's own spread;
#      RTCG_MPI_KEYS=bench: 20 keys of the examples at the bench table's sizes instead);
#   2. one search, SGEMM n=4096 tf32x3 with a fixed candidate budget: candidates measured per
#      second, and how many candidates each rank compiled for rank 0's pool (and `--devices` on
#      one rank, the single-host mode, for comparison);
#   3. the rows of the merged database against the ranks' results;
#   4. a rank killed mid-run (mpirun --enable-recovery): its key reported, --resume completes it;
#   5. the search of 2 with each rank bound to its own physical cores (the host's cores over its
#      GPUs, both hardware threads of each), as a batch system binds ranks on separate nodes: the
#      one rank gets one such share, R ranks R shares (one host's CPUs otherwise serve every rank's
#      compiles, so part 2 measures one host's compile rate, not R nodes').
#      With RTCG_MPI_BASE=DIR (another build's tree: DIR/tools/rtcgc/rtcgc and its rtcg-worker),
#      a comparison in one call: a warm-up search (a fresh machine's first search is slow), then
#      RTCG_MPI_PAIRS pairs (default 4) of the base and this build (.gpu/build-gpu), 1 rank and R
#      ranks each, alternating which goes first, and a table of each run's rate ratio (R ranks
#      against 1), wall ratio and first result, with the means.
# Results under $OUT (default ./gpu-out/mpi): logs, JSON summaries, the databases, summary.txt.
set -uo pipefail
root=$(pwd)
out=${OUT:-$root/gpu-out}/mpi
mkdir -p "$out"
src=$(cat "$root/.gpu/source-dir" 2>/dev/null || echo /work/main)
if [[ ! -e "$src" ]]; then mkdir -p "$(dirname "$src")" && ln -s "$root" "$src"; fi
[[ -e "$root/build-gpu" ]] || ln -s "$root/.gpu/build-gpu" "$root/build-gpu"
export LD_LIBRARY_PATH=$root/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PATH=$root/build-gpu/tools/rtcgc:$root/build-gpu/tools/rtcg-worker:$PATH
budget=${RTCG_MPI_BUDGET:-16}          # candidates per manifest key
sgemm_budget=${RTCG_MPI_SGEMM_BUDGET:-240}
exec > >(tee "$out/summary.txt") 2>&1

nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader
gpus=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
cores=$(nproc)
echo "gpus=$gpus cores=$cores"
# What the CPUs share (make_bind deals lscpu's cores; a virtual machine may not show hardware threads).
echo "cpu0's hardware threads: $(cat /sys/devices/system/cpu/cpu0/topology/thread_siblings_list 2>/dev/null)"
lscpu | grep -E "^(Model name|Socket|Core|Thread|NUMA node)" | sed 's/  */ /g'

# The MPI launcher: the machine's own, else the carried Open MPI wheel (.gpu/mpi), whose
# libmpi.so.40 then serves rtcgc too.
echo "== MPI on this machine"
command -v mpirun mpiexec || echo "no mpirun/mpiexec on PATH"
python3 -c "import mpi4py, mpi4py.MPI as M; print('mpi4py', mpi4py.__version__, M.Get_library_version().splitlines()[0])" 2>&1
if [[ -x "$root/.gpu/mpi/bin/mpirun" ]]; then
  mpirun_bin=$root/.gpu/mpi/bin/mpirun
  export OPAL_PREFIX=$root/.gpu/mpi PRTE_PREFIX=$root/.gpu/mpi PMIX_PREFIX=$root/.gpu/mpi
  export LD_LIBRARY_PATH=$root/.gpu/mpi/lib:$LD_LIBRARY_PATH
  echo "using the carried $(cat "$root/.gpu/mpi/WHEEL")"
elif command -v mpirun >/dev/null; then
  mpirun_bin=$(command -v mpirun)
  echo "using this machine's $mpirun_bin (rtcgc was built against Open MPI 4.1's libmpi.so.40)"
else
  echo "no MPI launcher: run scripts/gpu-pack-mpi.sh before carrying .gpu"; exit 1
fi
"$mpirun_bin" --version 2>&1 | head -1
ldd build-gpu/tools/rtcgc/rtcgc | grep -i mpi
mpi=("$mpirun_bin" --allow-run-as-root --bind-to none)

# Every rank's searches get its share of the cores for NVRTC.
per_rank=$((cores / gpus))
((per_rank > 16)) && per_rank=16

# Parts to run (RTCG_MPI_PARTS, default "1 2 4"; 3 is part of 1): each fits a device call of its own.
parts=" ${RTCG_MPI_PARTS:-1 2 4} "
want() { [[ $parts == *" $1 "* ]]; }
manifest_base=(--manifest "$out/kernels.json" --time-limit 60 --json)
manifest_args=("${manifest_base[@]}" --max-candidates "$budget")
# Each rank's CPU list: the host's physical cores (lscpu's socket, core pairs) dealt into one
# share per GPU, every hardware thread of a core in its share; $bind runs a command on the share of
# its local rank (taskset), as a batch system binds ranks on separate nodes.
make_bind() {
  python3 - "$gpus" >"$out/cpusets.txt" <<'PY'
import collections, subprocess, sys
gpus = int(sys.argv[1])
cores = collections.OrderedDict()
for line in subprocess.run(["lscpu", "-p=CPU,CORE,SOCKET"], capture_output=True, text=True).stdout.splitlines():
    if line.startswith("#"):
        continue
    cpu, core, socket = line.split(",")
    cores.setdefault((socket, core), []).append(cpu)
keys = list(cores)
per = max(1, len(keys) // gpus)
for r in range(gpus):
    print(",".join(c for k in keys[r * per:(r + 1) * per] for c in cores[k]))
PY
  bind=$out/bind.sh
  printf '#!/bin/bash\nexec taskset -c "$(sed -n "$((${OMPI_COMM_WORLD_LOCAL_RANK:-0} + 1))p" %q)" "$@"\n' "$out/cpusets.txt" >"$bind"
  chmod +x "$bind"
}
# ---- 1. the manifest --------------------------------------------------------------------------
python3 - "$out/kernels.json" <<'PY'
import json, re, sys
kernels = []
# RTCG_MPI_KEYS=bench: the examples at the bench table's sizes (docs/bench.md), where each candidate
# keeps the GPU busy for milliseconds rather than microseconds, in place of examples/sizes.txt's.
bench = """matmul.rtcg n=2048
matmul_flat.rtcg n=2048
dgemm.rtcg n=2048
gemv.rtcg m=8192 n=8192
transpose.rtcg m=8192 n=8192
dot.rtcg n=67108864
axpby.rtcg n=67108864
dg_diff.rtcg K=299551 Np=56
dg_diff.rtcg K=139720 Np=120
dg_diff_stacked.rtcg K=299551 Np=56
dg_diff_stacked.rtcg K=139720 Np=120
dg_lift.rtcg K=340630 Np=56 Nfp=21
softmax.rtcg m=65536 n=256
layernorm.rtcg m=65536 n=256
trmm.rtcg n=2048
syrk.rtcg n=2048 K=2048
sumfact.rtcg E=97826 p=7
batched_matmul.rtcg nb=65536 n=16
histogram.rtcg n=67108864 bins=256
cumsum.rtcg n=67108864"""
import os
lines = bench.splitlines() if os.environ.get("RTCG_MPI_KEYS") == "bench" else open("examples/sizes.txt")
for line in lines:
    parts = line.split()
    if not parts or parts[0].startswith("#") or parts[0] == "spmv.rtcg":
        continue  # spmv's search wants a real matrix (--input)
    source = open("examples/" + parts[0]).read()
    names = re.findall(r"^kernel\s+(\w+)", source, re.M)
    sizes = {k: int(v) for k, v in (b.split("=") for b in parts[1:])}
    kernels.append({"file": parts[0], "line": 1, "column": 1, "source": source, "sizes": sizes,
                    "sizesConstant": True, "errors": 0, "kernel": names[0], "kernels": names})
json.dump({"version": 1, "kernels": kernels}, open(sys.argv[1], "w"))
print(len(kernels), "manifest keys")
PY
if want 1; then
# RTCG_MPI_BIND=1: each rank bound to its share of the cores (make_bind), the one rank too, as on
# separate nodes (unbound, the R ranks' compiles share the host's cores). RTCG_MPI_WARMUP=1: the
# manifest once first at RTCG_MPI_WARMUP_BUDGET candidates a key (default 8) on
# RTCG_MPI_WARMUP_RANKS ranks (default 1), not counted: on a fresh machine the first compile of a
# kernel ran several times slower than a later compile of the same kernel in a fresh process
# (session 42: NVRTC at 4-27 candidates/s against 100-300/s), which favoured whatever ran second;
# only the same budget compiles the same candidates.
b1=()
if [[ ${RTCG_MPI_BIND:-0} == 1 ]]; then make_bind; b1=("$bind"); echo "== 1. bound: CPU shares $(awk '{print "[" $0 "]"}' "$out/cpusets.txt" | tr '\n' ' ')"; fi
if [[ ${RTCG_MPI_WARMUP:-0} == 1 ]]; then
  RTCG_CACHE_DIR=$(mktemp -d) timeout 590 "${mpi[@]}" -n "${RTCG_MPI_WARMUP_RANKS:-1}" "${b1[@]}" rtcgc tune "${manifest_base[@]}" \
    --max-candidates "${RTCG_MPI_WARMUP_BUDGET:-8}" --compile-threads "$per_rank" --db "$out/manifest-warmup.sqlite" >"$out/manifest-warmup.json" 2>"$out/manifest-warmup.log"
  echo "== 1. warm-up manifest, ${RTCG_MPI_WARMUP_RANKS:-1} rank(s), ${RTCG_MPI_WARMUP_BUDGET:-8} candidates a key: rc=$?"
fi
t0=$(date +%s.%N)
RTCG_CACHE_DIR=$(mktemp -d) timeout 590 "${mpi[@]}" -n 1 "${b1[@]}" rtcgc tune "${manifest_args[@]}" --compile-threads "$per_rank" \
  --db "$out/manifest-1.sqlite" >"$out/manifest-1.json" 2>"$out/manifest-1.log"
rc1=$?
t1=$(date +%s.%N)
RTCG_CACHE_DIR=$(mktemp -d) timeout 590 "${mpi[@]}" -n "$gpus" "${b1[@]}" rtcgc tune "${manifest_args[@]}" --compile-threads "$per_rank" \
  --db "$out/manifest-$gpus.sqlite" >"$out/manifest-$gpus.json" 2>"$out/manifest-$gpus.log"
rcR=$?
t2=$(date +%s.%N)
python3 -c "import sys; a,b,c=map(float,sys.argv[1:]); print(f'== 1. manifest: 1 rank rc=$rc1 {b-a:.1f} s; $gpus ranks rc=$rcR {c-b:.1f} s: {(b-a)/(c-b):.2f}x')" "$t0" "$t1" "$t2"
echo "$t0 $t1" >"$out/manifest-1.walls"; echo "$t1 $t2" >"$out/manifest-$gpus.walls"
# RTCG_MPI_ONE_TWICE=1: the 1-rank manifest again, for the search's own spread from run to run.
if [[ ${RTCG_MPI_ONE_TWICE:-0} == 1 ]]; then
  t3=$(date +%s.%N)
  RTCG_CACHE_DIR=$(mktemp -d) timeout 590 "${mpi[@]}" -n 1 "${b1[@]}" rtcgc tune "${manifest_args[@]}" --compile-threads "$per_rank" \
    --db "$out/manifest-1b.sqlite" >"$out/manifest-1b.json" 2>"$out/manifest-1b.log"
  echo "== 1b. the 1-rank manifest again: rc=$? $(python3 -c "import sys,time; print(f'{time.time()-float(sys.argv[1]):.1f} s')" "$t3")"
  echo "$t3 $(date +%s.%N)" >"$out/manifest-1b.walls"
fi
python3 - "$out/manifest-1.json" "$out/manifest-$gpus.json" "$out/manifest-$gpus.sqlite" "$out/manifest-1b.json" <<'PY'
import json, os, sqlite3, sys
def load(p):
    try:
        return {(k["kernel"], k["sizes"]): k for k in json.load(open(p))["kernels"]}
    except Exception as e:
        if os.path.exists(p): print("cannot read", p, e)
        return {}
def best(k):
    return ((k or {}).get("result") or {}).get("best") or {}
one, many, again = load(sys.argv[1]), load(sys.argv[2]), load(sys.argv[4])
# same: the R-rank winner is the 1-rank one's schedule; 1b: the second 1-rank run's winner against the first's.
print(f"{'kernel':<20} {'sizes':<26} {'1 rank ms':>10} {'R ranks ms':>10} {'ratio':>6} {'same':>5}"
      + (f" {'1b ms':>8} {'ratio':>6} {'same':>5}" if again else "") + "  outcome")
rows_sent = 0
for key, k in many.items():
    b1, bR, bB = best(one.get(key)), best(k), best(again.get(key))
    m1, mR, mB = b1.get("medianMs", 0), bR.get("medianMs", 0), bB.get("medianMs", 0)
    c = (k.get("result") or {}).get("counts", {})
    rows_sent += sum(c.get(n, 0) for n in ("verified", "wrong", "faulted", "timedOut", "launchFailed",
                                            "compileFailed", "skipped"))
    ratio = f"{mR / m1:.3f}" if m1 and mR else "-"
    same = "yes" if b1.get("schedule") and b1.get("schedule") == bR.get("schedule") else "no"
    line = f"{key[0]:<20} {key[1]:<26} {m1:>10.4f} {mR:>10.4f} {ratio:>6} {same:>5}"
    if again:
        sameB = "yes" if b1.get("schedule") and b1.get("schedule") == bB.get("schedule") else "no"
        line += f" {mB:>8.4f} {(f'{mB / m1:.3f}' if m1 and mB else '-'):>6} {sameB:>5}"
    print(line + f"  {k['outcome']}")
# Each run's ranks: keys, the sum of their searches, the waits between a rank's keys, and each rank's
# first start and last end counted from mpirun's launch (its .walls: launch and exit, Unix time), so
# the start-up before the first key and the shutdown after the last one show apart from the tail.
for name, d, p in (("1 rank", one, sys.argv[1]), ("R ranks", many, sys.argv[2]), ("1 rank again", again, sys.argv[4])):
    spans = {}
    for k in d.values():
        if k.get("startedAt"):
            spans.setdefault(k.get("rank", 0), []).append((k["startedAt"], k["endedAt"]))
    if not spans:
        continue
    first = min(a for s in spans.values() for a, _ in s)
    walls = p.replace(".json", ".walls")
    launch, exit_ = map(float, open(walls).read().split()) if os.path.exists(walls) else (first, None)
    def gaps(s):
        s = sorted(s)
        return sum(max(0.0, s[i + 1][0] - s[i][1]) for i in range(len(s) - 1))
    print(f"== {name}: " + "; ".join(
        f"rank {r}: {len(s)} keys, searches {sum(b - a for a, b in s):.1f} s, waits between keys {gaps(s):.2f} s, "
        f"from {min(a for a, _ in s) - launch:.1f} to {max(b for _, b in s) - launch:.1f} s" for r, s in sorted(spans.items()))
        + (f"; exit at {exit_ - launch:.1f} s" if exit_ else ""))
db = sqlite3.connect(sys.argv[3])
rows = db.execute("SELECT count(*) FROM candidates").fetchone()[0]
searches = db.execute("SELECT count(*) FROM searches WHERE finished_at IS NOT NULL").fetchone()[0]
print(f"== 3. merged database: {rows} candidate rows against {rows_sent} in the ranks' results; "
      f"{searches} finished searches, {len(many)} keys")
PY
grep -c "tunes " "$out/manifest-$gpus.log" | sed 's/^/keys dealt: /'
grep "rtcgc tune: rank [0-9]* tunes" "$out/manifest-$gpus.log" | awk '{print $4}' | sort | uniq -c | sed 's/^/  keys per rank: /'

fi
# ---- 2. one search -----------------------------------------------------------------------------
search_args=(examples/matmul.rtcg -D n=4096 --precision tf32x3 --max-candidates "$sgemm_budget" --time-limit 0 --json)
rate() {
  python3 -c "
import json,sys
j=json.load(open(sys.argv[1]))
c=j['counts']; m=c['verified']+c['wrong']+c['faulted']+c['timedOut']+c['launchFailed']
t=j['wallSeconds']-j['referenceSeconds']
print(f\"devices={j['devices']} measured={m} wall={j['wallSeconds']:.1f}s reference={j['referenceSeconds']:.1f}s \"
      f\"rate={m/t:.2f}/s best={j['best']['medianMs'] if j['best'] else None}\")" "$1" 2>&1
}
# Compile workers a search started, over its refinement rounds too (one per slot: the rounds run on
# the workers the first batch started).
starts() { echo "   compile workers started: $(grep -c "compile worker [0-9]* started" "$1")"; }
if want 2; then
RTCG_CACHE_DIR=$(mktemp -d) timeout 590 "${mpi[@]}" -n 1 rtcgc tune "${search_args[@]}" --db "$out/sgemm-1.sqlite" \
  >"$out/sgemm-1.json" 2>"$out/sgemm-1.log"
echo "== 2. one SGEMM search, 1 rank (rc=$?): $(rate "$out/sgemm-1.json")"
starts "$out/sgemm-1.log"
RTCG_CACHE_DIR=$(mktemp -d) timeout 590 "${mpi[@]}" -n "$gpus" rtcgc tune "${search_args[@]}" --db "$out/sgemm-$gpus.sqlite" \
  >"$out/sgemm-$gpus.json" 2>"$out/sgemm-$gpus.log"
echo "== 2. one SGEMM search, $gpus ranks (rc=$?): $(rate "$out/sgemm-$gpus.json")"
starts "$out/sgemm-$gpus.log"
# Rank 0's pool compiles on every rank's slots: each host's share, from the JSON and the logs.
grep -h "compiling with .* slots\|\] compiled .* candidates in" "$out/sgemm-$gpus.log" | sed 's/^/   /'
python3 -c "
import json,sys
j=json.load(open(sys.argv[1]))
print('   compiled per rank: ' + ', '.join(f\"{'rank 0' if h['host'] == 'local' else h['host']}: {h['compiled']} in {h['slots']} slots\"
                                          for h in j.get('compiledOn', [])))" "$out/sgemm-$gpus.json" 2>&1
RTCG_CACHE_DIR=$(mktemp -d) timeout 590 rtcgc tune "${search_args[@]}" --devices all --db "$out/sgemm-devices.sqlite" \
  >"$out/sgemm-devices.json" 2>"$out/sgemm-devices.log"
echo "== 2. one SGEMM search, --devices all, no MPI (rc=$?): $(rate "$out/sgemm-devices.json")"
starts "$out/sgemm-devices.log"

fi
# ---- 5. one search, ranks bound as on separate nodes ---------------------------------------------
if want 5; then
  make_bind
  echo "== 5. CPU share of each rank: $(awk '{print "[" $0 "]"}' "$out/cpusets.txt" | tr '\n' ' ')"
  # One search of build tree $1 on $2 ranks, each bound to its share ("unbound" as $4: one rank,
  # unbound), into $out/$3.{json,log}.
  bound_search() {
    local tree=$1 r=$2 tag=$3 b=("$bind")
    [[ ${4:-} == unbound ]] && b=()
    RTCG_CACHE_DIR=$(mktemp -d) timeout 590 "${mpi[@]}" -n "$r" "${b[@]}" "$tree/tools/rtcgc/rtcgc" tune \
      "${search_args[@]}" --db "$out/$tag.sqlite" >"$out/$tag.json" 2>"$out/$tag.log"
    echo "== 5. $tag: one SGEMM search, $r rank(s)${4:+, $4} (rc=$?): $(rate "$out/$tag.json")"
    python3 -c "
import json,sys
tl=json.load(open(sys.argv[1])).get('timeline', [])
print('   timeline: ' + ', '.join(f\"{e['event']} {e['seconds']:.2f}\" for e in tl if not e['event'].startswith(('busy', 'refinement'))))" \
      "$out/$tag.json" 2>&1
    starts "$out/$tag.log"
    grep -h "compiling with .* slots\|compiling .* candidates with NVRTC\|ready on\|\] compiled .* candidates in" "$out/$tag.log" | sed 's/^/   /'
  }
  if [[ -n "${RTCG_MPI_BASE:-}" ]]; then
    base_tree=$(cd "$RTCG_MPI_BASE" && pwd)
    pairs=${RTCG_MPI_PAIRS:-4}
    bound_search "$root/build-gpu" 1 warmup unbound
    for p in $(seq 1 "$pairs"); do
      order=(base branch)
      ((p % 2 == 0)) && order=(branch base)
      for v in "${order[@]}"; do
        tree=$root/build-gpu
        [[ $v == base ]] && tree=$base_tree
        bound_search "$tree" 1 "$v-1-p$p"
        bound_search "$tree" "$gpus" "$v-$gpus-p$p"
      done
    done
    python3 - "$out" "$gpus" "$pairs" <<'PY'
import json, sys
out, gpus, pairs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def run(tag):
    j = json.load(open(f"{out}/{tag}.json"))
    c = j["counts"]
    m = c["verified"] + c["wrong"] + c["faulted"] + c["timedOut"] + c["launchFailed"]
    tl = {e["event"]: e["seconds"] for e in j["timeline"]}
    return {"wall": j["wallSeconds"], "rate": m / (j["wallSeconds"] - j["referenceSeconds"]),
            "first": tl.get("first result", float("nan")), "queued": tl.get("candidates queued", float("nan")),
            "enum": tl.get("enumeration done", float("nan"))}
print(f"== 5. base against branch, {pairs} pairs (rate = measured / (wall - reference); first: the first result, s)")
print(f"| pair | build | 1 rank: wall, rate, first | {gpus} ranks: wall, rate, first | {gpus} ranks: enumeration done, candidates queued | rate ratio | wall ratio |")
print("|---|---|---|---|---|---|---|")
sums = {}
for p in range(1, pairs + 1):
    for v in (("base", "branch") if p % 2 else ("branch", "base")):
        try:
            one, many = run(f"{v}-1-p{p}"), run(f"{v}-{gpus}-p{p}")
        except Exception as e:
            print(f"| {p} | {v} | cannot read: {e} |"); continue
        ratio, wall = many["rate"] / one["rate"], one["wall"] / many["wall"]
        print(f"| {p} | {v} | {one['wall']:.2f} s, {one['rate']:.2f}/s, {one['first']:.2f} s | "
              f"{many['wall']:.2f} s, {many['rate']:.2f}/s, {many['first']:.2f} s | {many['enum']:.2f} s, {many['queued']:.2f} s | {ratio:.2f}x | {wall:.2f}x |")
        for k, x in (("ratio", ratio), ("wall1", one["wall"]), ("wallR", many["wall"]), ("first1", one["first"]),
                     ("firstR", many["first"]), ("enumR", many["enum"]), ("queuedR", many["queued"]), ("wallratio", wall)):
            sums.setdefault(v, {}).setdefault(k, []).append(x)
for v, s in sums.items():
    mean = {k: sum(x) / len(x) for k, x in s.items()}
    print(f"{v}: rate ratio mean {mean['ratio']:.2f}x (min {min(s['ratio']):.2f}, max {max(s['ratio']):.2f}), "
          f"wall ratio {mean['wallratio']:.2f}x; 1 rank {mean['wall1']:.2f} s, first result {mean['first1']:.2f} s; "
          f"{gpus} ranks {mean['wallR']:.2f} s, first result {mean['firstR']:.2f} s, enumeration done {mean['enumR']:.2f} s, candidates queued {mean['queuedR']:.2f} s")
PY
  else
    for r in 1 "$gpus"; do bound_search "$root/build-gpu" "$r" "bound-$r"; done
  fi
fi
# ---- 4. a rank killed mid-run --------------------------------------------------------------------
if want 4 && ((gpus > 1)); then
  kill_db=$out/kill.sqlite
  RTCG_CACHE_DIR=$(mktemp -d) "${mpi[@]}" --enable-recovery -n "$gpus" rtcgc tune "${manifest_base[@]}" --max-candidates 8 \
    --compile-threads "$per_rank" --rank-timeout 20 --db "$kill_db" >"$out/kill.json" 2>"$out/kill.log" &
  launcher=$!
  victim=""
  for _ in $(seq 1 60); do  # rank 1's rtcgc, once it is searching
    sleep 1
    for p in $(pgrep -x rtcgc); do
      if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=1'; then victim=$p; fi
    done
    [[ -n "$victim" ]] && grep -q "rank 1 tunes" "$out/kill.log" && break
  done
  sleep 2
  echo "== 4. killing rank 1 (pid $victim)"
  [[ -n "$victim" ]] && kill -9 "$victim"
  wait "$launcher"
  echo "killed run rc=$?: $(grep -c '"outcome": "lost"' "$out/kill.json") lost, $(grep -c '"outcome": "tuned"' "$out/kill.json") tuned"
  grep "it is lost" "$out/kill.log"
  RTCG_CACHE_DIR=$(mktemp -d) timeout 300 "${mpi[@]}" -n "$gpus" rtcgc tune "${manifest_base[@]}" --max-candidates 8 \
    --compile-threads "$per_rank" --resume --db "$kill_db" >"$out/resume.json" 2>"$out/resume.log"
  echo "resumed rc=$?: $(grep -c 'by an earlier run' "$out/resume.json") from the earlier run, $(grep -c 'rtcgc tune: rank [0-9]* tunes' "$out/resume.log") tuned now"
fi
echo "== done; logs in $out"

